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

// An upper bound of fma_exp_weight(x, l_max, temperature) for every x <= in, for about a quarter
// of its cost: the rejection draw's group bounds (rejection_draw.hpp). With y = (in - l_max) / T
// scaled as fma_exp_weight scales it, the float whose bits are (y log2 e + 127) 2^23 (rounded down,
// plus a margin of 1024 units) is 2^n (1 + f) for y log2 e = n + f, the chord of 2^x over
// [n, n + 1], which lies above 2^x (N. N. Schraudolph, "A fast, compact approximation of the
// exponential function", Neural Computation 11(4), 1999); the margin (a factor 2^(1024 / 2^23),
// 1 + 8.5e-5) covers the rounding of the constant, of the fma and of the truncation (< 200 units),
// and fma_exp_weight's own 1e-7. At most 6.2% above exp(y) (the chord's gap, largest at
// f = 1 / ln 2 - 1), 4.1% on average over f. 0 where fma_exp_weight gives 0 for every x <= in.
// Same bits in every clone: one explicit fma, a truncation and an integer add.
void fma_exp_bounds(const float* in, int64_t n, float l_max, float temperature, float* out);

// The same value for one input, scalar (the definition the vector clones must match).
[[nodiscard]] float fma_exp_bound(float in, float l_max, float temperature);

}  // namespace tessera::sampler
