#include <algorithm>
#include <numeric>

#include "reference_kernels.hpp"

namespace tessera::reference {

std::vector<int32_t> indexer_select(const float* q, const float* w, int32_t n_heads,
                                    int32_t head_dim, const float* keys, int64_t n_visible,
                                    int32_t top_k) {
  std::vector<double> score(static_cast<size_t>(n_visible), 0.0);
  for (int64_t k = 0; k < n_visible; ++k) {
    const float* key = keys + k * head_dim;
    double total = 0.0;
    for (int32_t h = 0; h < n_heads; ++h) {
      const float* qh = q + static_cast<int64_t>(h) * head_dim;
      double dot = 0.0;
      for (int32_t c = 0; c < head_dim; ++c) dot += static_cast<double>(qh[c]) * key[c];
      total += static_cast<double>(w[h]) * std::max(dot, 0.0);
    }
    score[static_cast<size_t>(k)] = total;
  }
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
