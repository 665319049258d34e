// Sampling weights w_i = exp((l_i - l_max) / T) for a whole row, vectorised. The exponent is the
// same fp32 expression as the scalar path ((l - l_max) / T, rounded to float); exp itself is a
// Cody-Waite reduction and a degree-7 polynomial in fp32 (exp_weights.cpp), within 1e-7
// relative of the true value (tests/unit/sampler_kernels_test.cpp measures it), so within
// 2^-22 relative of libm's expf (glibc: <= 0.502 ulp).
// Callers that need libm's exact bits (the draw must stay token-for-token identical to the scalar
// sampler) certify their decisions against that bound (certified_draw.hpp) and fall back to
// std::exp when a decision is too close to call.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::sampler {

// Weights are summed per block of this many tokens; the draw walks the block sums first.
inline constexpr int64_t kWeightBlock = 64;

// Per-element bound used to certify decisions: |fast_i - expf_i| <= kWeightRelError * fast_i +
// kWeightAbsError. Ours is within kFastExpRelError of the true value (max 8.4e-8 with FMA
// contraction, the AVX2 / AVX-512 clones, and 8.2e-8 without, the SSE2 clone, over every
// float exponent in [-104, 0]; tests/unit/sampler_kernels_test.cpp samples it), glibc's expf
// within 0.502 ulp <= 0.502 * 2^-23 relative: together < 1.6e-7 < 2^-22 = 2.4e-7. The absolute
// term covers results under the smallest normal float (ours are 0 there).
inline constexpr double kFastExpRelError = 1.0e-7;
inline constexpr double kWeightRelError = 0x1.0p-22;
inline constexpr double kWeightAbsError = 0x1.0p-126;

// How far a row's weights may be from libm's: the certified decisions take it as a parameter, so
// they run on fast weights (kFastWeights) and, when one of those is too close to call, again on
// libm's own weights (kLibmWeights: only the double sums' rounding is left to cover).
struct WeightBound {
  double rel = 0.0;
  double abs = 0.0;
};
inline constexpr WeightBound kFastWeights{kWeightRelError, kWeightAbsError};
inline constexpr WeightBound kLibmWeights{0.0, 0.0};

struct BlockWeights {
  std::vector<double> block_sums;  // [ceil(vocab / kWeightBlock)] sum of each block, in double
  double total = 0.0;              // sum of block_sums
};

// logits: [vocab] finite or -inf (removed: weight 0); out: [vocab]. Requires temperature > 0 and
// l_max >= every logit. The largest weight is exactly 1.
void fast_exp_weights(std::span<const float> logits, float l_max, float temperature,
                      std::span<float> out, BlockWeights& sums);

// The scalar path's weights, libm's std::exp of the same fp32 exponent (0 for removed tokens),
// with their block sums: what a decision too close to call on fast weights is decided on.
void libm_exp_weights(std::span<const float> logits, float l_max, float temperature,
                      std::span<float> out, BlockWeights& sums);

// Recomputes the block sums of weights changed after fast_exp_weights (min-p).
void sum_weight_blocks(std::span<const float> weights, BlockWeights& sums);

}  // namespace tessera::sampler
