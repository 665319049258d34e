#include "ops/norms.hpp"

#include <cmath>

#include "tessera/simd_clones.hpp"

namespace tessera::ops {

// The sum of squares in double with 8 interleaved partial sums: independent chains the compiler
// vectorises (one running sum is a serial chain of `width` dependent adds, ~2% of a 64-sequence
// decode step's CPU). Only the order of the double additions changes: ~1e-16 relative, far below
// the fp32 result's resolution.
TS_SIMD_CLONES float rms_scale(const float* x, int64_t width, float eps) {
  constexpr int64_t kLanes = 8;
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= width; i += kLanes) {
    for (int64_t k = 0; k < kLanes; ++k) {
      lanes[k] += static_cast<double>(x[i + k]) * static_cast<double>(x[i + k]);
    }
  }
  double sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
               ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  for (; i < width; ++i) {
    sum += static_cast<double>(x[i]) * x[i];
  }
  return static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(width) + eps));
}

TS_SIMD_CLONES void rms_norm(float* x, int64_t rows, int64_t width, const float* weight,
                             float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * width;
    const float scale = rms_scale(row, width, eps);
    for (int64_t i = 0; i < width; ++i) {
      row[i] = weight[i] * (row[i] * scale);
    }
  }
}

TS_SIMD_CLONES void rms_norm_unweighted(float* x, int64_t rows, int64_t width, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * width;
    const float scale = rms_scale(row, width, eps);
    for (int64_t i = 0; i < width; ++i) {
      row[i] *= scale;
    }
  }
}

}  // namespace tessera::ops
