#include "fma_exp.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "target_clones.hpp"  // TS_SAMPLER_CLONES: one clone per x86-64 level
#include "tessera/fma_exp.hpp"

namespace tessera::sampler {
namespace {

// The SDK's Cephes expf with explicit fmas (tessera/fma_exp.hpp) on the scaled logit.
[[gnu::always_inline]] inline float weight(float in, float l_max, float t) {
  return sdk::fma_exp_nonpositive((in - l_max) / t);
}

// out[i] = op(in[i], l_max, t) for i < n, inlined into each caller's clones.
template <typename Op>
[[gnu::always_inline]] inline void map_scaled(const float* __restrict in, int64_t n, float l_max,
                                              float t, float* __restrict out, Op op) {
  if (t == 1.0f) {  // x / 1 == x exactly: the constant drops the division, same bits
    for (int64_t i = 0; i < n; ++i) {
      out[i] = op(in[i], l_max, 1.0f);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    out[i] = op(in[i], l_max, t);
  }
}

TS_SAMPLER_CLONES void weights(const float* __restrict in, int64_t n, float l_max, float t,
                               float* __restrict out) {
  map_scaled(in, n, l_max, t, out, [](float x, float m, float s) { return weight(x, m, s); });
}

// (y log2 e + 127) 2^23 = fma(y, log2 e 2^23, 127 2^23): the biased exponent of 2^(y log2 e) in a
// float's bits, with the fraction as its mantissa.
constexpr float kLog2eBits = sdk::fma_exp_constants::kLog2e * 0x1.0p23f;  // exact: a power of 2
constexpr float kBiasBits = 127.0f * 0x1.0p23f;
constexpr int32_t kBoundMargin = 1024;

[[gnu::always_inline]] inline float bound(float in, float l_max, float t) {
  const float y = (in - l_max) / t;  // as weight() scales it
  const float yc = std::max(y, sdk::fma_exp_constants::kMinExponent);
  const auto bits = static_cast<int32_t>(std::fma(yc, kLog2eBits, kBiasBits)) + kBoundMargin;
  return y < sdk::fma_exp_constants::kMinExponent ? 0.0f : std::bit_cast<float>(bits);
}

TS_SAMPLER_CLONES void bounds(const float* __restrict in, int64_t n, float l_max, float t,
                              float* __restrict out) {
  map_scaled(in, n, l_max, t, out, [](float x, float m, float s) { return bound(x, m, s); });
}

}  // namespace

void fma_exp_bounds(const float* in, int64_t n, float l_max, float temperature, float* out) {
  bounds(in, n, l_max, temperature, out);
}

TS_SAMPLER_CLONES float fma_exp_bound(float in, float l_max, float temperature) {
  return bound(in, l_max, temperature);
}

void fma_exp_weights(const float* in, int64_t n, float l_max, float temperature, float* out) {
  weights(in, n, l_max, temperature, out);
}

// Cloned like the loop: in the default (SSE2) build each std::fma is a call to glibc's fmaf.
TS_SAMPLER_CLONES float fma_exp_weight(float in, float l_max, float temperature) {
  return weight(in, l_max, temperature);
}

}  // namespace tessera::sampler
