#include "weights/numeric_encoding.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "util/check.hpp"
#include "weights/numeric_formats.hpp"

namespace tessera::weights {

uint16_t f32_to_bf16(float value) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

uint8_t f32_to_e4m3(float value) noexcept {
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const float a = std::fabs(value);
  if (!(a < kE4M3Max)) return static_cast<uint8_t>(sign | 0x7E);  // saturate (and NaN)
  if (a < 0.015625f) {  // below 2^-6: subnormal codes m * 2^-9, m = 0..8 (8 is 2^-6, code 0x08)
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(std::nearbyint(a * 512.0f)));
  }
  // Round the 23-bit fp32 mantissa to 3 bits, ties to even; a carry moves into the exponent,
  // which is the next code up since codes are ordered like the magnitudes.
  uint32_t bits = std::bit_cast<uint32_t>(a);
  bits += 0x7FFFF + ((bits >> 20) & 1);
  const uint32_t exponent = (bits >> 23) - 127 + 7;
  const uint32_t code = (exponent << 3) | ((bits >> 20) & 7);
  return static_cast<uint8_t>(sign | std::min<uint32_t>(code, 0x7E));
}

uint8_t f32_to_e2m1(float value) noexcept {
  const uint8_t sign = std::signbit(value) ? 0x8 : 0x0;
  const float a = std::fabs(value);
  // Midpoints between {0, 0.5, 1, 1.5, 2, 3, 4, 6}; a tie goes to the even code.
  const uint8_t code = a <= 0.25f   ? 0
                       : a < 0.75f  ? 1
                       : a <= 1.25f ? 2
                       : a < 1.75f  ? 3
                       : a <= 2.5f  ? 4
                       : a < 3.5f   ? 5
                       : a <= 5.0f  ? 6
                                    : 7;  // saturate (and NaN)
  return static_cast<uint8_t>(sign | code);
}

uint8_t ue8m0_scale_for(float amax, float max_code) noexcept {
  if (!(amax > 0.0f)) return 127;
  int exponent = 0;
  const float mantissa = std::frexp(amax / max_code, &exponent);  // amax/max = m * 2^e, m in [.5,1)
  const int log2_ceil = mantissa == 0.5f ? exponent - 1 : exponent;
  return static_cast<uint8_t>(std::clamp(log2_ceil, -127, 127) + 127);
}

void quantize_fp8_block_row(std::span<const float> values, int64_t rows_in_block, int64_t cols,
                            std::span<uint8_t> codes, std::span<uint8_t> scales) {
  constexpr int64_t kBlock = 128;
  const int64_t blocks = (cols + kBlock - 1) / kBlock;
  TS_CHECK(rows_in_block > 0 && rows_in_block <= kBlock, "fp8 block row of {} rows", rows_in_block);
  TS_CHECK(static_cast<int64_t>(values.size()) == rows_in_block * cols &&
               codes.size() == values.size() && static_cast<int64_t>(scales.size()) == blocks,
           "fp8 block row: sizes do not match [{}, {}]", rows_in_block, cols);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c0 = b * kBlock, c1 = std::min(cols, c0 + kBlock);
    float amax = 0.0f;
    for (int64_t r = 0; r < rows_in_block; ++r)
      for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(values[r * cols + c]));
    const uint8_t scale = ue8m0_scale_for(amax, kE4M3Max);
    scales[b] = scale;
    const float inverse = 1.0f / ue8m0_to_f32(scale);  // a power of two: exact
    for (int64_t r = 0; r < rows_in_block; ++r)
      for (int64_t c = c0; c < c1; ++c)
        codes[r * cols + c] = f32_to_e4m3(values[r * cols + c] * inverse);
  }
}

void quantize_fp4_row(std::span<const float> values, std::span<uint8_t> packed,
                      std::span<uint8_t> scales) {
  constexpr size_t kGroup = 32;
  TS_CHECK(values.size() % kGroup == 0 && packed.size() * 2 == values.size() &&
               scales.size() * kGroup == values.size(),
           "fp4 row of {} values: {} packed bytes, {} scales", values.size(), packed.size(),
           scales.size());
  for (size_t g = 0; g < scales.size(); ++g) {
    float amax = 0.0f;
    for (size_t i = 0; i < kGroup; ++i) amax = std::max(amax, std::fabs(values[g * kGroup + i]));
    scales[g] = ue8m0_scale_for(amax, kE2M1Max);
    const float inverse = 1.0f / ue8m0_to_f32(scales[g]);
    for (size_t i = 0; i < kGroup; i += 2) {
      const size_t c = g * kGroup + i;
      packed[c / 2] = static_cast<uint8_t>(f32_to_e2m1(values[c] * inverse) |
                                           (f32_to_e2m1(values[c + 1] * inverse) << 4));
    }
  }
}

}  // namespace tessera::weights
