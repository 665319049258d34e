// The plain, obviously-correct CPU math of the reference attention backend, in fp32. Every faster
// backend is compared with these (tests/cuda: attention_mma_test, attention_mma_emulated_test);
// tests/unit/reference_attention_kernel_test.cpp checks them against their definitions.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::reference {

// Lightning indexer (DSV4.md §2.5): score(k) = sum_h w[h] * ReLU(q[h] . key[k]) over the first
// n_visible keys (in fp32: lightning_indexer.cpp); returns the indices of the min(top_k,
// n_visible) best, best first (ties: lower index first).
//   q    [n_heads, head_dim]     w [n_heads]
//   keys [n_visible, head_dim]
std::vector<int32_t> indexer_select(const float* q, const float* w, int32_t n_heads,
                                    int32_t head_dim, const float* keys, int64_t n_visible,
                                    int32_t top_k);

// Sparse attention with a sink for one query token, all heads (DSV4.md §2.3 step 6):
//   w_j = exp(s_j) / (sum_j exp(s_j) + exp(sink_h)),  s_j = scale * q_h . kv_j,  o_h = sum_j w_j
//   kv_j q   [n_heads, dim]    rows: pointers to n_rows kv vectors of length dim (K == V) out
//   [n_heads, dim]
void attend_with_sink(const float* q, int32_t n_heads, int32_t dim, const float* const* rows,
                      int64_t n_rows, float scale, const float* sink, float* out);

}  // namespace tessera::reference
