#include "model/moe.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ops/compute_threads.hpp"
#include "ops/linear.hpp"
#include "util/check.hpp"

namespace tessera::dsv4 {

namespace {

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }  // torch threshold 20

float silu(float x) { return x / (1.0f + std::exp(-x)); }

// y[rows, D] = w2 . (silu(min(w1 x, L)) * clamp(w3 x, -L, L))
void swiglu_expert(const ModelConfig& config, const Expert& e, const float* x, int64_t rows,
                   float* y) {
  const int64_t inter = e.w1.shape[0];
  std::vector<float> gate(static_cast<size_t>(rows * inter)), up(gate.size());
  ops::linear(x, rows, e.w1, gate.data());
  ops::linear(x, rows, e.w3, up.data());
  const float limit = static_cast<float>(config.swiglu_limit);
  for (size_t i = 0; i < gate.size(); ++i) {
    float g = gate[i], u = up[i];
    if (limit > 0) {
      g = std::min(g, limit);
      u = std::clamp(u, -limit, limit);
    }
    gate[i] = silu(g) * u;
  }
  ops::linear(gate.data(), rows, e.w2, y);
}

}  // namespace

void moe_forward(const ModelConfig& config, const Moe& moe, bool hash_layer, const float* x,
                 const int32_t* token_ids, int64_t tokens, float* out) {
  const int64_t D = config.hidden_size, E = config.n_routed_experts, K = config.experts_per_token;
  std::vector<float> scores(static_cast<size_t>(tokens * E));
  ops::linear(x, tokens, moe.gate, scores.data());
  for (float& s : scores) {
    s = std::sqrt(softplus(s));
  }

  // Routing: per token K (expert, weight) pairs, then grouped by expert.
  std::vector<std::vector<int64_t>> rows_of(static_cast<size_t>(E));
  std::vector<std::vector<float>> weight_of(static_cast<size_t>(E));
  std::vector<int32_t> chosen(static_cast<size_t>(K));
  std::vector<int32_t> order(static_cast<size_t>(E));
  for (int64_t t = 0; t < tokens; ++t) {
    const float* s = scores.data() + t * E;
    if (hash_layer) {
      const int64_t id = token_ids[t];
      TS_CHECK(id >= 0 && id * K < static_cast<int64_t>(moe.tid2eid.size()),
               "hash routing: token id {} outside tid2eid", id);
      for (int64_t k = 0; k < K; ++k) {
        chosen[k] = moe.tid2eid[static_cast<size_t>(id * K + k)];
      }
    } else {
      std::iota(order.begin(), order.end(), 0);
      const float* bias = moe.bias ? moe.bias->ptr() : nullptr;
      auto biased = [&](int32_t e) { return s[e] + (bias ? bias[e] : 0.0f); };
      std::partial_sort(order.begin(), order.begin() + K, order.end(), [&](int32_t a, int32_t b) {
        return biased(a) != biased(b) ? biased(a) > biased(b) : a < b;
      });
      std::copy(order.begin(), order.begin() + K, chosen.begin());
    }
    double sum = 0;
    for (int32_t e : chosen) {
      sum += s[e];
    }
    for (int32_t e : chosen) {
      TS_CHECK(e >= 0 && e < E, "routing picked expert {} of {}", e, E);
      rows_of[e].push_back(t);
      weight_of[e].push_back(
          static_cast<float>(s[e] / (sum + 1e-20) * config.routed_scaling_factor));
    }
  }

  swiglu_expert(config, moe.shared, x, tokens, out);  // shared expert writes out first

  // Routed experts: each on one thread, the experts shared over the compute threads (a batch's
  // expert GEMMs have ~tokens * K / E rows: too small to split one GEMM well). Every expert's
  // rows and weights are the same on any thread (the GEMM is batch- and thread-invariant), and
  // the results are added in expert order afterwards, so the bits do not depend on the split.
  std::vector<int64_t> active;
  for (int64_t e = 0; e < E; ++e) {
    if (!rows_of[e].empty()) {
      active.push_back(e);
    }
  }
  std::vector<std::vector<float>> results(active.size());
  auto run_expert = [&](int64_t a) {
    const int64_t e = active[static_cast<size_t>(a)];
    const auto& rows = rows_of[e];
    const auto n = static_cast<int64_t>(rows.size());
    std::vector<float> gathered(static_cast<size_t>(n * D));
    for (int64_t r = 0; r < n; ++r) {
      std::copy(x + rows[r] * D, x + (rows[r] + 1) * D, gathered.begin() + r * D);
    }
    results[static_cast<size_t>(a)].resize(static_cast<size_t>(n * D));
    swiglu_expert(config, moe.experts[e], gathered.data(), n,
                  results[static_cast<size_t>(a)].data());
  };
  if (ops::gemm_threads_are_ours() && active.size() > 1) {
    ops::parallel_for(static_cast<int64_t>(active.size()), ops::compute_threads(), run_expert);
  } else {  // OpenBLAS threads each GEMM itself
    for (int64_t a = 0; a < static_cast<int64_t>(active.size()); ++a) {
      run_expert(a);
    }
  }
  for (size_t a = 0; a < active.size(); ++a) {
    const int64_t e = active[a];
    const auto& rows = rows_of[e];
    const std::vector<float>& result = results[a];
    for (size_t r = 0; r < rows.size(); ++r) {
      const float w = weight_of[e][r];
      float* dst = out + rows[r] * D;
      const float* src = result.data() + static_cast<int64_t>(r) * D;
      for (int64_t i = 0; i < D; ++i) {
        dst[i] += w * src[i];
      }
    }
  }
}

}  // namespace tessera::dsv4
