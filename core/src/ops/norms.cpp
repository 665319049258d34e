#include "ops/norms.hpp"

#include <cmath>

#include "tessera/simd_clones.hpp"

namespace tessera::ops {

// The sum of squares in double with 32 interleaved partial sums (value i into sum i % 32), added
// as a fixed tree: independent chains the compiler vectorises (one running sum is a serial chain
// of `width` dependent adds; 8 partial sums, one vector, still waited on the FMA's latency at every
// step: ~1.5% of a 64-sequence decode step's CPU in the mHC's 2048-wide rows). Only the order of
// the double additions changes: ~1e-16 relative, far below the fp32 result's resolution.
TS_SIMD_CLONES float rms_scale(const float* x, int64_t width, float eps) {
  constexpr int64_t kLanes = 32;
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= width; i += kLanes) {
    for (int64_t k = 0; k < kLanes; ++k) {
      lanes[k] += static_cast<double>(x[i + k]) * static_cast<double>(x[i + k]);
    }
  }
  for (int64_t k = 0; i + k < width; ++k) {
    lanes[k] += static_cast<double>(x[i + k]) * static_cast<double>(x[i + k]);
  }
  for (int64_t half = kLanes / 2; half >= 1; half /= 2) {
    for (int64_t k = 0; k < half; ++k) {
      lanes[k] += lanes[k + half];
    }
  }
  return static_cast<float>(1.0 / std::sqrt(lanes[0] / static_cast<double>(width) + eps));
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
