#include "fma_exp.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "exp_constants.hpp"
#include "target_clones.hpp"  // TS_SAMPLER_CLONES: one clone per x86-64 level

namespace tessera::sampler {
namespace {

// The Cephes expf method and constants of exp_weights.cpp (exp_constants.hpp), fmas explicit.
[[gnu::always_inline]] inline float weight(float in, float l_max, float t) {
  const float x = (in - l_max) / t;
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

TS_SAMPLER_CLONES void weights(const float* __restrict in, int64_t n, float l_max, float t,
                               float* __restrict out) {
  if (t == 1.0f) {  // x / 1 == x exactly: the constant drops the division, same bits
    for (int64_t i = 0; i < n; ++i) {
      out[i] = weight(in[i], l_max, 1.0f);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    out[i] = weight(in[i], l_max, t);
  }
}

}  // namespace

void fma_exp_weights(const float* in, int64_t n, float l_max, float temperature, float* out) {
  weights(in, n, l_max, temperature, out);
}

float fma_exp_weight(float in, float l_max, float temperature) {
  return weight(in, l_max, temperature);
}

}  // namespace tessera::sampler
