// What the tensor-core GEMMs (linear_bf16_mma.cu, linear_quantised_mma.cu) share: a warp's 16 x 64
// slice of a 64 x 64 output tile, held as 8 m16n8 accumulators, written to y [rows, out].
// Accumulator layout (PTX ISA, "Matrix fragments for mma.m16n8k16"): acc[j][0..1] are row
// lane / 4, outputs j * 8 + 2 (lane % 4) + {0, 1}; acc[j][2..3] the same outputs of row + 8.
#pragma once

#include "device_primitives.cuh"

namespace tessera::kernels {

// Rows [row0, row0 + 16) ∩ [0, rows) and outputs [n0, n0 + 64) ∩ [0, out) of y.
TS_DEVICE void store_warp_tile(const float (&acc)[8][4], int64_t row0, int64_t n0, int lane,
                               int64_t rows, int64_t out, float* y) {
  for (int j = 0; j < 8; ++j) {
    const int64_t col = n0 + j * 8 + 2 * (lane & 3);
    for (int half = 0; half < 2; ++half) {
      const int64_t row = row0 + (lane >> 2) + half * 8;
      if (row >= rows) continue;
      if (col < out) y[row * out + col] = acc[j][2 * half];
      if (col + 1 < out) y[row * out + col + 1] = acc[j][2 * half + 1];
    }
  }
}

}  // namespace tessera::kernels
