// The checkpoint's number formats, decoded and encoded the same way on the host (the cpu
// backend, the emulator) and on the GPU, so the cpu oracle and the kernels quantise activations
// to the same bits. Formats (OCP): FP8 e4m3fn (bias 7, no infinity, 0x7f/0xff NaN, max 448),
// UE8M0 (2^(e-127), 0xff NaN), FP4 e2m1 (magnitudes 0, .5, 1, 1.5, 2, 3, 4, 6; bit 3 the sign).
// Encoding is round-to-nearest-even and saturates at +-448, as cvt.rn.satfinite.e4m3x2.f32.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TS_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TS_HOST_DEVICE inline
#endif

namespace tessera::formats {

TS_HOST_DEVICE uint32_t bits_of(float v) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(v);
#else
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
#endif
}

TS_HOST_DEVICE float float_of(uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  float v;
  std::memcpy(&v, &b, 4);
  return v;
#endif
}

TS_HOST_DEVICE float e4m3_to_float(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80) << 24;
  const uint32_t exponent = (code >> 3) & 0xF, mantissa = code & 7;
  if (exponent == 0xF && mantissa == 7) return float_of(0x7FC00000u | sign);
  if (exponent == 0)  // subnormal: mantissa * 2^-9, exact in fp32
    return float_of(bits_of(static_cast<float>(mantissa) * (1.0f / 512.0f)) | sign);
  return float_of(sign | (exponent - 7 + 127) << 23 | mantissa << 20);
}

TS_HOST_DEVICE float ue8m0_to_float(uint8_t e) {
  if (e == 0xFF) return float_of(0x7FC00000u);
  if (e == 0) return float_of(0x00400000u);  // 2^-127, subnormal
  return float_of(static_cast<uint32_t>(e) << 23);
}

TS_HOST_DEVICE float e2m1_to_float(uint8_t nibble) {
  constexpr float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float m = kMagnitude[nibble & 7];
  return (nibble & 8) ? -m : m;
}

TS_HOST_DEVICE uint8_t float_to_e4m3(float v) {
  const uint32_t b = bits_of(v);
  const auto sign = static_cast<uint8_t>((b >> 24) & 0x80);
  const uint32_t magnitude = b & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return static_cast<uint8_t>(sign | 0x7F);  // NaN
  const float a = float_of(magnitude);
  if (a >= 448.0f) return static_cast<uint8_t>(sign | 0x7E);  // saturate (infinity too)
  if (a < 0.015625f) {                // below 2^-6: subnormal steps of 2^-9, ties to even
    const float scaled = a * 512.0f;  // exact: a power-of-two scale of a normal fp32
    auto m = static_cast<uint32_t>(scaled);
    const float rest = scaled - static_cast<float>(m);
    if (rest > 0.5f || (rest == 0.5f && (m & 1))) ++m;
    return static_cast<uint8_t>(sign | m);  // m == 8 is 2^-6, the smallest normal: code 0x08
  }
  int exponent = static_cast<int>(magnitude >> 23) - 127;  // -6 .. 8
  uint32_t keep = (magnitude >> 20) & 7;
  const uint32_t rest = magnitude & 0xFFFFFu;
  if (rest > 0x80000u || (rest == 0x80000u && (keep & 1))) ++keep;
  if (keep == 8) {
    keep = 0;
    ++exponent;
  }
  if (exponent > 8 || (exponent == 8 && keep == 7)) return static_cast<uint8_t>(sign | 0x7E);
  return static_cast<uint8_t>(sign | static_cast<uint32_t>(exponent + 7) << 3 | keep);
}

// The activation scale of one 1x128 block (DeepSeek's act_quant with scale_fmt ue8m0):
// s = 2^ceil(log2(max(amax, 1e-4) / 448)), a power of two, so x / s is exact.
TS_HOST_DEVICE float e4m3_block_scale(float amax) {
  const float s = (amax > 1e-4f ? amax : 1e-4f) / 448.0f;
  const uint32_t b = bits_of(s);
  const uint32_t exponent = (b >> 23) & 0xFF;
  return float_of(((b & 0x7FFFFFu) != 0 ? exponent + 1 : exponent) << 23);
}

}  // namespace tessera::formats
