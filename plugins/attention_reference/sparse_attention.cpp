#include <algorithm>
#include <cmath>
#include <vector>

#include "reference_kernels.hpp"

namespace tessera::reference {

void attend_with_sink(const float* q, int32_t n_heads, int32_t dim, const float* const* rows,
                      int64_t n_rows, float scale, const float* sink, float* out) {
  std::vector<double> logit(static_cast<size_t>(n_rows));
  for (int32_t h = 0; h < n_heads; ++h) {
    const float* qh = q + static_cast<int64_t>(h) * dim;
    double max_logit = sink[h];  // the sink joins the softmax denominator (no value vector)
    for (int64_t j = 0; j < n_rows; ++j) {
      double dot = 0.0;
      for (int32_t c = 0; c < dim; ++c) dot += static_cast<double>(qh[c]) * rows[j][c];
      logit[j] = dot * scale;
      max_logit = std::max(max_logit, logit[j]);
    }
    double denom = std::exp(static_cast<double>(sink[h]) - max_logit);
    for (int64_t j = 0; j < n_rows; ++j) {
      logit[j] = std::exp(logit[j] - max_logit);
      denom += logit[j];
    }
    std::vector<double> acc(static_cast<size_t>(dim), 0.0);
    for (int64_t j = 0; j < n_rows; ++j)
      for (int32_t c = 0; c < dim; ++c) acc[c] += logit[j] * rows[j][c];
    float* oh = out + static_cast<int64_t>(h) * dim;
    for (int32_t c = 0; c < dim; ++c) oh[c] = static_cast<float>(acc[c] / denom);
  }
}

}  // namespace tessera::reference
