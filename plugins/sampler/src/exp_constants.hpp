// The constants of the sampler's two fp32 exps (exp_weights.cpp, fma_exp.cpp).
// e^x = 2^n e^r with n = round(x log2 e), r = x - n ln2 (|r| <= ln2 / 2). Constants from the
// Cephes math library's expf (S. L. Moshier): ln2 split as C1 + C2 with C1 = 0.693359375 exactly
// (9 bits), so n C1 is exact for the |n| <= 126 used here and x - n C1 loses nothing (Cody &
// Waite); e^r = 1 + r + r^2 P(r), P of degree 5 (theoretical peak error 4.2e-9 on the interval).
#pragma once

namespace tessera::sampler {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kC1 = 0.693359375f;
constexpr float kC2 = -2.12194440e-4f;
constexpr float kP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                         4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
// Adding 1.5 * 2^23 rounds a float of magnitude < 2^22 to the nearest integer, which then sits in
// the low mantissa bits (round-to-nearest mode, the default).
constexpr float kRoundShift = 0x1.8p23f;
// Below ln(2^-126) the weight is under the smallest normal float: it becomes 0. The clamp keeps
// 2^n normal and turns -inf (removed tokens) into a finite exponent before a select zeroes it.
constexpr float kMinExponent = -87.33654475f;

}  // namespace tessera::sampler
