#include "ops/norms.hpp"

#include <cmath>

namespace tessera::ops {

float rms_scale(const float* x, int64_t width, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < width; ++i) sum += static_cast<double>(x[i]) * x[i];
  return static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(width) + eps));
}

void rms_norm(float* x, int64_t rows, int64_t width, const float* weight, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * width;
    const float scale = rms_scale(row, width, eps);
    for (int64_t i = 0; i < width; ++i) row[i] = weight[i] * (row[i] * scale);
  }
}

void rms_norm_unweighted(float* x, int64_t rows, int64_t width, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * width;
    const float scale = rms_scale(row, width, eps);
    for (int64_t i = 0; i < width; ++i) row[i] *= scale;
  }
}

}  // namespace tessera::ops
