// Dense fp32 building blocks on top of OpenBLAS (cblas). Linear weights are [out, in] row-major,
// as stored in DeepSeek checkpoints.
#pragma once

#include <cstdint>

#include "model/dsv4_weights.hpp"

namespace tessera::ops {

// y[rows, out] = x[rows, in] . W^T          (W: [out, in])
void linear(const float* x, int64_t rows, const dsv4::Tensor& w, float* y);

// y[rows, out] = x[rows, in] . W^T with explicit leading dimensions (for grouped projections):
// x rows are ldx apart, y rows ldy apart, W is [out, in] with rows ldw apart.
void linear_strided(const float* x, int64_t rows, int64_t in, int64_t ldx, const float* w,
                    int64_t out, int64_t ldw, float* y, int64_t ldy);

}  // namespace tessera::ops
