// The sampler's rejection-draw weight exp((l - l_max) / T) and its bound as docs/sampler.md defines
// them, written out for the tests (not the plugin's code): Cody-Waite reduction and the Cephes
// expf polynomial with every product-and-add one correctly rounded std::fma, every other operation
// rounded alone.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace tessera::sampler_test {

inline float reference_fma_exp(float in, float l_max, float t) {
  const float x = (in - l_max) / t;
  const float xc = std::max(x, -87.33654475f);         // ln(2^-126): below, the weight is 0
  volatile float product = xc * 1.44269504088896341f;  // rounded on its own, never fused
  const float shifted = product + 0x1.8p23f;
  const float k = shifted - 0x1.8p23f;  // round(x log2 e)
  const float r = std::fma(-k, -2.12194440e-4f, std::fma(-k, 0.693359375f, xc));
  const float c[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                      4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
  float p = c[0];
  for (int i = 1; i < 6; ++i) {
    p = std::fma(p, r, c[i]);
  }
  volatile float r2 = r * r;
  const float e_r = std::fma(p, r2, r) + 1.0f;
  const int32_t kb = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(0x1.8p23f);
  return x < -87.33654475f ? 0.0f
                           : e_r * std::bit_cast<float>(static_cast<uint32_t>(kb + 127) << 23);
}

// The rejection draw's group bound (docs/sampler.md "Rejection draw"): the float whose bits are
// trunc(fma(y, log2 e 2^23, 127 2^23)) + 1024, y the scaled logit above; 0 below ln(2^-126).
inline float reference_exp_bound(float in, float l_max, float t) {
  const float y = (in - l_max) / t;
  const float yc = std::max(y, -87.33654475f);
  const float biased = std::fma(yc, 1.44269504088896341f * 8388608.0f, 127.0f * 8388608.0f);
  const int32_t bits = static_cast<int32_t>(biased) + 1024;
  return y < -87.33654475f ? 0.0f : std::bit_cast<float>(bits);
}

}  // namespace tessera::sampler_test
