#include "fma_exp.hpp"

#include "target_clones.hpp"  // TS_SAMPLER_CLONES: one clone per x86-64 level
#include "tessera/fma_exp.hpp"

namespace tessera::sampler {
namespace {

// The SDK's Cephes expf with explicit fmas (tessera/fma_exp.hpp) on the scaled logit.
[[gnu::always_inline]] inline float weight(float in, float l_max, float t) {
  return sdk::fma_exp_nonpositive((in - l_max) / t);
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

// Cloned like the loop: in the default (SSE2) build each std::fma is a call to glibc's fmaf.
TS_SAMPLER_CLONES float fma_exp_weight(float in, float l_max, float temperature) {
  return weight(in, l_max, temperature);
}

}  // namespace tessera::sampler
