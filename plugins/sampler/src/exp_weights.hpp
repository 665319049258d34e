// Sampling weights w_i = exp((l_i - l_max) / T) for a whole row, vectorised. The exponent is the
// same fp32 expression as the scalar path ((l - l_max) / T, rounded to float); exp itself is
// evaluated in double (range reduction e^x = 2^n * 2^r, |r| <= 1/2, Taylor polynomial of degree
// 8 for 2^r, relative error < 3e-10) and rounded once to float, so each weight is within
// 0.5 ulp + 3e-10 of the true value: at most 1 ulp from libm's expf (glibc: <= 0.502 ulp).
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
// kWeightAbsError. Two floats within 1 ulp each of the same value are at most 2 ulp, 2^-22
// relative, apart; glibc's expf is documented within 0.502 ulp and ours within 0.51, so the bound
// holds with a factor 2 to spare (measured on 160M exponents in [-110, 0]: never more than 1 ulp).
// The absolute term covers subnormal results.
inline constexpr double kWeightRelError = 0x1.0p-22;
inline constexpr double kWeightAbsError = 0x1.0p-126;

struct BlockWeights {
  std::vector<double> block_sums;  // [ceil(vocab / kWeightBlock)] sum of each block, in double
  double total = 0.0;              // sum of block_sums
};

// logits: [vocab] finite or -inf (removed: weight 0); out: [vocab]. Requires temperature > 0 and
// l_max >= every logit. The largest weight is exactly 1.
void fast_exp_weights(std::span<const float> logits, float l_max, float temperature,
                      std::span<float> out, BlockWeights& sums);

// Recomputes the block sums of weights changed after fast_exp_weights (min-p).
void sum_weight_blocks(std::span<const float> weights, BlockWeights& sums);

}  // namespace tessera::sampler
