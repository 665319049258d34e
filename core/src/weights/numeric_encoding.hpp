// Encoding fp32 into the storage formats of DeepSeek-V4 checkpoints (the inverse of
// numeric_formats.hpp), as the official quantisation does it: a block's scale is the power of two
// 2^ceil(log2(amax / max_code)) (UE8M0), and each value divided by it is rounded to the nearest
// code (ties to the even code). Used to write random checkpoints in the official format.
#pragma once

#include <cstdint>
#include <span>

namespace tessera::weights {

inline constexpr float kE4M3Max = 448.0f;  // largest finite e4m3fn magnitude
inline constexpr float kE2M1Max = 6.0f;    // largest e2m1 magnitude

[[nodiscard]] uint16_t f32_to_bf16(float value) noexcept;  // round to nearest even
[[nodiscard]] uint8_t f32_to_e4m3(float value) noexcept;   // nearest code, saturating at 448
[[nodiscard]] uint8_t f32_to_e2m1(float value) noexcept;   // low 4 bits; saturating at 6
// The UE8M0 byte of 2^ceil(log2(amax / max_code)); 127 (1.0) when amax is 0. amax / scale is then
// at most max_code.
[[nodiscard]] uint8_t ue8m0_scale_for(float amax, float max_code) noexcept;

// One FP8 block-row of a [rows, cols] weight: `rows_in_block` (<= 128) rows of fp32 values become
// e4m3 bytes [rows_in_block, cols] and ceil(cols / 128) UE8M0 scales, one per 128x128 block.
void quantize_fp8_block_row(std::span<const float> values, int64_t rows_in_block, int64_t cols,
                            std::span<uint8_t> codes, std::span<uint8_t> scales);
// One row of an FP4 expert weight: cols fp32 values become cols / 2 packed bytes (low nibble =
// even column) and cols / 32 UE8M0 scales, one per 32 consecutive columns.
void quantize_fp4_row(std::span<const float> values, std::span<uint8_t> packed,
                      std::span<uint8_t> scales);

}  // namespace tessera::weights
