// exp((l - l_max) / T) computed the same, bit for bit, on every x86-64 CPU: the rejection draw
// (rejection_draw.hpp) decides on these weights directly, with no certification against libm, so
// a seed must give the same weights whatever clone runs. Same reduction and polynomial as
// exp_weights.cpp (Cody-Waite, Cephes expf), but every product-and-add is an explicit
// correctly-rounded fma (hardware FMA in the AVX2 / AVX-512 clones, glibc's exact fmaf in the
// SSE2 one) and nothing else is contracted (-ffp-contract=off, plugins/sampler/CMakeLists.txt).
// Within kFastExpRelError (exp_weights.hpp) of the true value; tests/unit/sampler_kernels_test.cpp
// measures it and checks the running clone against a scalar fma evaluation.
#pragma once

#include <cstdint>

namespace tessera::sampler {

// out[i] = exp((in[i] - l_max) / temperature) for i < n; 0 for in[i] = -inf or an exponent below
// ln(2^-126). Requires temperature > 0 and l_max >= in[i].
void fma_exp_weights(const float* in, int64_t n, float l_max, float temperature, float* out);

// The same value for one input, scalar (the definition the vector clones must match).
[[nodiscard]] float fma_exp_weight(float in, float l_max, float temperature);

}  // namespace tessera::sampler
