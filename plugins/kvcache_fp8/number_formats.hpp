// The three number formats of the FP8 cache, each as encode (from a finite value) and decode:
//   FP8 e4m3 ("e4m3fn", OCP): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits. No infinities;
//     0x7F / 0xFF are NaN. Largest finite 448 = 0x7E, smallest normal 2^-6, denormals m * 2^-9.
//   UE8M0: an unsigned biased exponent byte b meaning 2^(b - 127) (0xFF is NaN).
//   BF16: the upper half of an fp32.
// Rounding is round-to-nearest, ties-to-even everywhere (what torch's .to(float8_e4m3fn) and
// .to(bfloat16) and the CUDA cvt.rn instructions do). e4m3 encoding saturates: |v| > 448 gives
// +-448 (cvt.rn.satfinite semantics); inside the formats of this plugin |v| <= 448 always holds,
// so saturation is a guard, not a rounding mode anyone depends on.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tessera::kvfp8 {

inline constexpr double kE4m3Max = 448.0;
inline constexpr uint8_t kE4m3MaxCode = 0x7E;

// v: any finite double (the exact scaled value). Sign is kept, also for results that round to
// zero (-tiny -> 0x80, negative zero), as IEEE conversions do.
inline uint8_t encode_e4m3(double v) noexcept {
  const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  const double a = std::fabs(v);
  if (a >= kE4m3Max) return sign | kE4m3MaxCode;
  // Below 2^-6 the grid is m * 2^-9 (m = 0..8). m == 8 is 2^-6, whose code (exponent field 1,
  // mantissa 0) is the integer 8: the denormal and normal codes meet without a special case.
  if (a < 0x1p-6) return sign | static_cast<uint8_t>(std::nearbyint(a * 0x1p9));
  int e2 = 0;
  const double fraction = std::frexp(a, &e2);  // a = fraction * 2^e2, fraction in [0.5, 1)
  int exponent = e2 - 1;  // a = (2 * fraction) * 2^exponent, exponent in [-6, 8]
  int mantissa = static_cast<int>(std::nearbyint((2 * fraction - 1) * 8));  // exact product
  if (mantissa == 8) {  // rounded up into the next binade
    mantissa = 0;
    ++exponent;
  }
  return sign | static_cast<uint8_t>(((exponent + 7) << 3) | mantissa);
}

inline double decode_e4m3(uint8_t code) noexcept {
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  const int field = (code >> 3) & 0x0F;
  const int mantissa = code & 0x07;
  if (field == 0x0F && mantissa == 0x07) return std::nan("");
  if (field == 0) return sign * std::ldexp(mantissa, -9);
  return sign * std::ldexp(8 + mantissa, field - 7 - 3);
}

// Smallest k with 2^k >= q, for finite q > 0 (exact: no floating-point log2).
inline int ceil_log2(double q) noexcept {
  int e2 = 0;
  const double fraction = std::frexp(q, &e2);  // q = fraction * 2^e2, fraction in [0.5, 1)
  return fraction == 0.5 ? e2 - 1 : e2;
}

inline uint8_t encode_ue8m0(int exponent) noexcept { return static_cast<uint8_t>(exponent + 127); }
inline int decode_ue8m0(uint8_t byte) noexcept { return static_cast<int>(byte) - 127; }

// fp32 -> bf16, round-to-nearest-even on the dropped 16 bits (finite input).
inline uint16_t encode_bf16(float value) noexcept {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline float decode_bf16(uint16_t half) noexcept {
  const uint32_t bits = static_cast<uint32_t>(half) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Little-endian stores/loads of multi-byte values into page bytes (pages are byte arrays and
// records need not be aligned for their element types).
inline void put_u16(uint8_t* dst, uint16_t v) noexcept {
  dst[0] = static_cast<uint8_t>(v & 0xFF);
  dst[1] = static_cast<uint8_t>(v >> 8);
}
inline uint16_t get_u16(const uint8_t* src) noexcept {
  return static_cast<uint16_t>(src[0] | (src[1] << 8));
}
inline void put_f32(uint8_t* dst, float v) noexcept {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  for (int i = 0; i < 4; ++i) dst[i] = static_cast<uint8_t>(bits >> (8 * i));
}
inline float get_f32(const uint8_t* src) noexcept {
  uint32_t bits = 0;
  for (int i = 0; i < 4; ++i) bits |= static_cast<uint32_t>(src[i]) << (8 * i);
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

}  // namespace tessera::kvfp8
