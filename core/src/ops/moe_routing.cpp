#include "ops/moe_routing.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <vector>

#include "ops/compute_threads.hpp"

namespace tessera::ops {
namespace {

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }  // torch threshold 20

// Routing runs in chunks of at least this many tokens (a 64-token step: one chunk per thread;
// serial, its softplus and top-k were ~25 us of each layer on the engine loop thread alone).
constexpr int64_t kMinTokensPerRoutingChunk = 16;

// value = min(value, t), atomically.
void lower_to(std::atomic<int64_t>& value, int64_t t) {
  int64_t seen = value.load(std::memory_order_relaxed);
  while (t < seen && !value.compare_exchange_weak(seen, t, std::memory_order_relaxed)) {
  }
}

}  // namespace

int64_t route_tokens(const MoeRouting& routing, float* scores, int64_t tokens, int32_t* picked,
                     float* weights) {
  const int64_t E = routing.experts, K = routing.per_token;
  std::atomic<int64_t> first_bad{tokens};
  for_each_row_chunk(tokens, kMinTokensPerRoutingChunk, [&](int64_t t0, int64_t t1) {
    std::vector<int32_t> order(static_cast<size_t>(E));
    for (int64_t t = t0; t < t1; ++t) {
      float* s = scores + t * E;
      for (int64_t e = 0; e < E; ++e) {
        s[e] = std::sqrt(softplus(s[e]));
      }
      int32_t* chosen = picked + t * K;
      if (routing.tid2eid != nullptr) {
        const int64_t id = routing.token_ids[t];
        if (id < 0 || id * K >= routing.table_size) {
          lower_to(first_bad, t);
          continue;
        }
        std::copy_n(routing.tid2eid + id * K, K, chosen);
      } else {
        std::iota(order.begin(), order.end(), 0);
        const float* bias = routing.bias;
        auto biased = [&](int32_t e) { return s[e] + (bias ? bias[e] : 0.0f); };
        std::partial_sort(order.begin(), order.begin() + K, order.end(), [&](int32_t a, int32_t b) {
          return biased(a) != biased(b) ? biased(a) > biased(b) : a < b;
        });
        std::copy(order.begin(), order.begin() + K, chosen);
      }
      if (std::any_of(chosen, chosen + K, [&](int32_t e) { return e < 0 || e >= E; })) {
        lower_to(first_bad, t);
        continue;
      }
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        sum += s[chosen[k]];
      }
      for (int64_t k = 0; k < K; ++k) {
        weights[t * K + k] = static_cast<float>(s[chosen[k]] / (sum + 1e-20) * routing.scaling);
      }
    }
  });
  return first_bad.load();
}

}  // namespace tessera::ops
