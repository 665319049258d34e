// Decoding of the storage number formats of DeepSeek-V4 checkpoints to fp32. Every value of
// these formats is exactly representable in fp32, so decoding never rounds.
//   BF16      : the top 16 bits of an fp32.
//   F8_E4M3   : OCP FP8 "e4m3fn": sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 is
//               subnormal (m/8 * 2^-6); 0x7f / 0xff are NaN; there is no infinity. 0x38 = 1.0.
//   F8_E8M0   : OCP MX "UE8M0" scale: byte e means 2^(e-127); 0xff is NaN. 127 = 1.0.
//   FP4 e2m1  : OCP MX FP4: sign bit 3, magnitude {0, 0.5, 1, 1.5, 2, 3, 4, 6}; two per byte,
//               the LOW nibble holds the even column. 0x7 = 6.0, 0xf = -6.0.
// Bulk routines use lookup tables and plain loops (bandwidth-bound, no per-element dispatch) and
// accept unaligned sources (safetensors data offsets need not be aligned).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "weights/dtype.hpp"

namespace tessera::weights {

[[nodiscard]] float bf16_to_f32(uint16_t bits) noexcept;
[[nodiscard]] float f16_to_f32(uint16_t bits) noexcept;
[[nodiscard]] float fp8_e4m3_to_f32(uint8_t bits) noexcept;
[[nodiscard]] float ue8m0_to_f32(uint8_t bits) noexcept;
[[nodiscard]] float fp4_e2m1_to_f32(uint8_t nibble) noexcept;  // uses the low 4 bits

// True for the element types convert_to_f32 accepts: F32, F16, BF16, F8_E4M3, F8_E8M0.
[[nodiscard]] bool is_convertible_to_f32(DType dtype) noexcept;

// Element-wise decode of `dst.size()` elements; src.size() must be exactly that many elements.
void convert_to_f32(DType dtype, std::span<const std::byte> src, std::span<float> dst);

// FP8 e4m3 weight [rows, cols] with one fp32 scale per block_rows x block_cols block:
// out[r, c] = w[r, c] * scale[r / block_rows, c / block_cols];
// scale is [ceil(rows/block_rows), ceil(cols/block_cols)] (DeepSeek: 128 x 128 blocks).
void dequantize_fp8_blocks(std::span<const std::byte> weight, int64_t rows, int64_t cols,
                           std::span<const float> scale, int64_t block_rows, int64_t block_cols,
                           std::span<float> out);

// Packed FP4 e2m1 weight [rows, cols / 2] bytes with one fp32 scale per `group` consecutive
// columns: out[r, c] = fp4(w[r, c]) * scale[r, c / group]; scale is [rows, ceil(cols/group)].
void dequantize_fp4_groups(std::span<const std::byte> packed, int64_t rows, int64_t cols,
                           std::span<const float> scale, int64_t group, std::span<float> out);

}  // namespace tessera::weights
