// RMSNorm flavours of DeepSeek-V4 (TRANSFORMERS_NOTES.md §B): x * rsqrt(mean(x^2) + eps), with or
// without a weight, computed in fp32 in place over rows of `width` values.
#pragma once

#include <cstdint>

namespace tessera::ops {

void rms_norm(float* x, int64_t rows, int64_t width, const float* weight, float eps);
void rms_norm_unweighted(float* x, int64_t rows, int64_t width, float eps);
// 1 / sqrt(mean(x^2) + eps) of one row (the mHC input scale).
float rms_scale(const float* x, int64_t width, float eps);

}  // namespace tessera::ops
