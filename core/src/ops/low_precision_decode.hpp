// Tiles of checkpoint weights in e4m3 and e2m1 decoded to bf16 with their UE8M0 scales folded in,
// for the CPU's FP8 and FP4 products (ops/linear_low_precision.cpp). Every such value is a bf16
// number, so a decoded value is formats::e4m3_to_float / e2m1_to_float
// (core/cuda/kernels/number_formats.cuh) times the scale, exactly (NaN codes included; for scales
// below 2^-117 the fp32 product itself rounds, the same way on every path).
//
// Where the CPU runs our GEMM kernel of that width (ops/linear_detail.hpp): with AVX-512 BW, 32
// values at a time from tables of the unscaled values whose exponents the scale moves (scales
// that keep every value a normal bf16 number; the others as below); with AVX-512 F or AVX2, 16 at
// a time, each value times the scale in fp32. Without our kernels (OpenBLAS), one at a time.
#pragma once

#include <cstdint>

namespace tessera::ops {

// Rows [o0, o0 + n) of an FP8 weight [out, in] e4m3 with w_scale [ceil(out / 128),
// ceil(in / 128)] UE8M0, in bf16 with the scales folded in: out [n, in]. The rows lie in one
// 128-row block of scales.
void decode_fp8_tile(const uint8_t* w, const uint8_t* w_scale, int64_t in, int64_t o0, int64_t n,
                     uint16_t* out);
// The same for an FP4 weight [out, in / 2] packed e2m1 (low nibble first) with w_scale
// [out, in / 32]; in % 32 == 0.
void decode_fp4_tile(const uint8_t* w, const uint8_t* w_scale, int64_t in, int64_t o0, int64_t n,
                     uint16_t* out);

}  // namespace tessera::ops
