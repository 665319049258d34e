// exp(x) for x <= 0 in fp32 with the same bits on every x86-64 CPU, scalar or vectorised: the
// Cephes expf method (S. L. Moshier) with every product-and-add an explicit, correctly rounded
// fma. e^x = 2^n e^r with n = round(x log2 e), r = x - n ln2 (|r| <= ln2 / 2); ln2 split as
// C1 + C2 with C1 = 0.693359375 exactly (9 bits), so n C1 is exact for |n| <= 126 and x - n C1
// loses nothing (Cody & Waite); e^r = 1 + r + r^2 P(r), P of degree 5 (theoretical peak error
// 4.2e-9 on the interval; ~1e-7 relative with fp32 rounding). Below ln(2^-126) the result is 0.
// A translation unit that includes this must be compiled with -ffp-contract=off: the rounding of
// x log2 e + 2^23 * 1.5 to an integer needs its two roundings (the sampler and the reference
// attention do; tests/unit/sampler_kernels_test.cpp checks the error and the clones' bits).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace tessera::sdk::fma_exp_constants {

inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kC1 = 0.693359375f;
inline constexpr float kC2 = -2.12194440e-4f;
inline constexpr float kP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
// Adding 1.5 * 2^23 rounds a float of magnitude < 2^22 to the nearest integer, which then sits in
// the low mantissa bits (round-to-nearest mode, the default).
inline constexpr float kRoundShift = 0x1.8p23f;
// Below ln(2^-126) the result is under the smallest normal float: it becomes 0. The clamp keeps
// 2^n normal and turns -inf into a finite exponent before a select zeroes it.
inline constexpr float kMinExponent = -87.33654475f;

}  // namespace tessera::sdk::fma_exp_constants

namespace tessera::sdk {

// e^x for x <= 0 (x = -inf gives 0). No branch: loops over it vectorise (with -fno-trapping-math
// for the final select), each lane computing what this scalar code computes.
[[nodiscard]] [[gnu::always_inline]] inline float fma_exp_nonpositive(float x) {
  using namespace fma_exp_constants;  // NOLINT(google-build-using-namespace): the method's names
  const float xc = std::max(x, kMinExponent);
  const float shifted = xc * kLog2e + kRoundShift;  // two roundings: never contracted
  const float k = shifted - kRoundShift;
  const float r = std::fma(-k, kC2, std::fma(-k, kC1, xc));
  float p = kP[0];
  p = std::fma(p, r, kP[1]);
  p = std::fma(p, r, kP[2]);
  p = std::fma(p, r, kP[3]);
  p = std::fma(p, r, kP[4]);
  p = std::fma(p, r, kP[5]);
  const float e_r = std::fma(p, r * r, r) + 1.0f;
  const int32_t k_bits = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kRoundShift);
  const float scale = std::bit_cast<float>(static_cast<uint32_t>(k_bits + 127) << 23);
  return x < kMinExponent ? 0.0f : e_r * scale;
}

}  // namespace tessera::sdk
