// The MoE router (ops/moe_routing.hpp is the CPU definition): scores = sqrt(softplus(logit)),
// each token's K experts by biased score (ties to the lower expert) or from tid2eid, weights
// = score / sum * scaling, the sum in double as on the CPU. One block per token: the scores in
// parallel, the selection (K scans of E) and the weights by its first thread.
#include "device_primitives.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;

constexpr int kThreads = 256;

// *bad = tokens before the routing min-reduces into it (a kernel, so that a graph replays it).
TS_KERNEL(32) init_bad_kernel(int64_t* bad, int64_t tokens) {
  if (thread_index() == 0) *bad = tokens;
}

// scores: [tokens, E] in place; bias: [E] or null; tid2eid: [table_size] or null (learned);
// token_ids: [tokens]; picked, weights: [tokens, K]; bad: one int64, min-reduced.
TS_KERNEL(kThreads)
moe_routing_kernel(float* scores, int64_t E, int64_t K, const float* bias, const int32_t* tid2eid,
                   int64_t table_size, const int32_t* token_ids, double scaling, int32_t* picked,
                   float* weights, int64_t* bad) {
  const int64_t t = block_index();
  float* s = scores + t * E;
  for (int64_t e = thread_index(); e < E; e += kThreads) {
    const float x = s[e];
    s[e] = sqrtf(x > 20.0f ? x : log1pf(expf(x)));  // softplus with torch's threshold
  }
  sync_block();
  if (thread_index() != 0) return;
  int32_t* chosen = picked + t * K;
  bool ok = true;
  if (tid2eid != nullptr) {
    const int64_t id = token_ids[t];
    ok = id >= 0 && id * K < table_size;
    for (int64_t k = 0; k < K; ++k) chosen[k] = ok ? tid2eid[id * K + k] : -1;
  } else {
    for (int64_t k = 0; k < K; ++k) {  // the best not yet chosen, ties to the lower expert
      int32_t best = -1;
      float best_score = 0.0f;
      for (int64_t e = 0; e < E; ++e) {
        bool taken = false;
        for (int64_t j = 0; j < k; ++j) taken = taken || chosen[j] == e;
        const float v = s[e] + (bias != nullptr ? bias[e] : 0.0f);
        if (!taken && (best < 0 || v > best_score)) {
          best = static_cast<int32_t>(e);
          best_score = v;
        }
      }
      chosen[k] = best;
    }
  }
  for (int64_t k = 0; k < K; ++k) ok = ok && chosen[k] >= 0 && chosen[k] < E;
  if (!ok) {
    atomic_min_i64(bad, t);
    return;
  }
  double sum = 0;
  for (int64_t k = 0; k < K; ++k) sum += s[chosen[k]];
  for (int64_t k = 0; k < K; ++k)
    weights[t * K + k] = static_cast<float>(s[chosen[k]] / (sum + 1e-20) * scaling);
}

}  // namespace

cudaError_t launch_moe_routing(float* scores, int64_t tokens, int64_t E, int64_t K,
                               const float* bias, const int32_t* tid2eid, int64_t table_size,
                               const int32_t* token_ids, double scaling, int32_t* picked,
                               float* weights, int64_t* bad, cudaStream_t stream) {
  TS_LAUNCH(init_bad_kernel, dim3(1), dim3(32), 0, stream, bad, tokens);
  if (tokens <= 0) return cudaGetLastError();
  TS_LAUNCH(moe_routing_kernel, dim3(static_cast<unsigned>(tokens)), dim3(kThreads), 0, stream,
            scores, E, K, bias, tid2eid, table_size, token_ids, scaling, picked, weights, bad);
  return cudaGetLastError();
}

}  // namespace tessera::kernels
