// The lightning indexer's selection (reference_kernels.hpp) in fp32 (ARCHITECTURE.md): per key,
// each head's dot product as attend_with_sink's (dot16, fp32_dot.hpp), its ReLU, and the heads
// summed as one fma chain w[h] * relu + total over h ascending. The dot products' 16 fma lanes
// vectorise; a double-precision chain of one add per column takes ~1% of a 64-sequence step of
// the 50m preset against ~0.35% for this (docs/perf.md "fp32 reference attention and indexer").
// No contraction (-ffp-contract=off, CMakeLists.txt): the same scores on every CPU.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "fp32_dot.hpp"
#include "reference_kernels.hpp"
#include "tessera/simd_clones.hpp"

namespace tessera::reference {
namespace {

TS_SIMD_CLONES void score_keys(const float* q, const float* w, int32_t n_heads, int32_t head_dim,
                               const float* keys, int64_t n_visible, float* score) {
  for (int64_t k = 0; k < n_visible; ++k) {
    const float* key = keys + k * head_dim;
    float total = 0.0f;
    for (int32_t h = 0; h < n_heads; ++h) {
      const float dot = dot16(q + static_cast<int64_t>(h) * head_dim, key, head_dim);
      total = std::fma(w[h], std::max(dot, 0.0f), total);
    }
    score[k] = total;
  }
}

}  // namespace

std::vector<int32_t> indexer_select(const float* q, const float* w, int32_t n_heads,
                                    int32_t head_dim, const float* keys, int64_t n_visible,
                                    int32_t top_k) {
  std::vector<float> score(static_cast<size_t>(n_visible));
  score_keys(q, w, n_heads, head_dim, keys, n_visible, score.data());
  std::vector<int32_t> order(static_cast<size_t>(n_visible));
  std::iota(order.begin(), order.end(), 0);
  const auto keep = static_cast<int64_t>(std::min<int64_t>(top_k, n_visible));
  std::partial_sort(order.begin(), order.begin() + keep, order.end(), [&](int32_t a, int32_t b) {
    return score[a] != score[b] ? score[a] > score[b] : a < b;
  });
  order.resize(static_cast<size_t>(keep));
  return order;
}

}  // namespace tessera::reference
