// The reference attention's fp32 operations on the device, as its CPU code defines them
// (fp32_dot.hpp, sink_softmax.hpp, tessera/fma_exp.hpp): the same operations in the same order,
// fmas where the CPU code writes std::fma and nowhere else (the module is compiled without
// contraction: cmake/TesseraCudaSibling.cmake), so a kernel gives the CPU's bits.
#pragma once

#include "device_primitives.cuh"
#include "tessera/fma_exp.hpp"

namespace tessera::refcuda {

TS_DEVICE float fma32(float a, float b, float c) {
#ifdef TESSERA_DEVICE_EMULATION
  return std::fma(a, b, c);
#else
  return __fmaf_rn(a, b, c);
#endif
}

// fold16 of fp32_dot.hpp: lanes k and k + 8, then k and k + 4, then (0 + 2) + (1 + 3).
TS_DEVICE float fold16(const float* l) {
  float h8[8], h4[4];
  for (int k = 0; k < 8; ++k) h8[k] = l[k] + l[k + 8];
  for (int k = 0; k < 4; ++k) h4[k] = h8[k] + h8[k + 4];
  return (h4[0] + h4[2]) + (h4[1] + h4[3]);
}

// dot16 of fp32_dot.hpp: 16 fma chains over c = k (mod 16), folded, then an fma chain over the
// last dim % 16 values.
TS_DEVICE float dot16(const float* q, const float* row, int32_t dim) {
  float lanes[16];
  for (int k = 0; k < 16; ++k) lanes[k] = 0.0f;
  const int32_t full = dim - dim % 16;
  for (int32_t c = 0; c < full; c += 16)
    for (int k = 0; k < 16; ++k) lanes[k] = fma32(q[c + k], row[c + k], lanes[k]);
  float d = fold16(lanes);
  for (int32_t c = full; c < dim; ++c) d = fma32(q[c], row[c], d);
  return d;
}

// The polynomial of tessera/fma_exp.hpp, as scalars a kernel may read.
inline constexpr float kExpP0 = 1.9875691500e-4f, kExpP1 = 1.3981999507e-3f,
                       kExpP2 = 8.3334519073e-3f, kExpP3 = 4.1665795894e-2f,
                       kExpP4 = 1.6666665459e-1f, kExpP5 = 5.0000001201e-1f;
static_assert(kExpP0 == sdk::fma_exp_constants::kP[0] && kExpP1 == sdk::fma_exp_constants::kP[1] &&
                  kExpP2 == sdk::fma_exp_constants::kP[2] &&
                  kExpP3 == sdk::fma_exp_constants::kP[3] &&
                  kExpP4 == sdk::fma_exp_constants::kP[4] &&
                  kExpP5 == sdk::fma_exp_constants::kP[5],
              "the device exp must use fma_exp.hpp's coefficients");

// sdk::fma_exp_nonpositive, operation for operation.
TS_DEVICE float exp_nonpositive(float x) {
  namespace c = sdk::fma_exp_constants;
  const float xc = x < c::kMinExponent ? c::kMinExponent : x;  // std::max(x, kMinExponent)
  const float shifted = xc * c::kLog2e + c::kRoundShift;
  const float k = shifted - c::kRoundShift;
  const float r = fma32(-k, c::kC2, fma32(-k, c::kC1, xc));
  float p = kExpP0;
  p = fma32(p, r, kExpP1);
  p = fma32(p, r, kExpP2);
  p = fma32(p, r, kExpP3);
  p = fma32(p, r, kExpP4);
  p = fma32(p, r, kExpP5);
  const float e_r = fma32(p, r * r, r) + 1.0f;
  const int32_t k_bits = static_cast<int32_t>(dev::float_bits(shifted)) -
                         static_cast<int32_t>(dev::float_bits(c::kRoundShift));
  const float scale = dev::bits_float(static_cast<uint32_t>(k_bits + 127) << 23);
  return x < c::kMinExponent ? 0.0f : e_r * scale;
}

}  // namespace tessera::refcuda
