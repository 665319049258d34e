// The temperature draw from fast weights (exp_weights.hpp), certified to return the very token the
// scalar path (libm expf weights + draw_from_weights) returns, so that a seed keeps drawing the
// same tokens. Let e_i be the libm weights and f_i the fast ones, |e_i - f_i| <= d f_i + a
// (d = kWeightRelError, a = kWeightAbsError). Every prefix sum and the total then differ by at
// most d T + V a (T = total fast weight, V = vocab), plus the double rounding of the sums
// (< 4 V 2^-53 T). The scalar draw returns the first token whose cumulative weight exceeds u T_e;
// if the fast cumulative weight crosses u T_f at token i with a margin larger than twice that
// bound on both sides, the libm cumulative weight crosses u T_e at the same token. Otherwise
// (rare: a few rows in a hundred for a flat 16k vocabulary, ~never for peaked rows) the caller
// recomputes the row with libm.
#pragma once

#include <cstdint>
#include <span>

#include "exp_weights.hpp"

namespace tessera::sampler {

// weights: [vocab] fast weights, sums: their block sums; u in [0, 1). The token, or -1 when the
// decision is too close to call from fast weights.
[[nodiscard]] int32_t certified_draw(std::span<const float> weights, const BlockWeights& sums,
                                     double u, const WeightBound& bound);

// min-p on fast weights (drop w < min_p, the largest weight being 1): a weight too close to
// min_p to tell which side libm's expf would put it is recomputed with std::exp (of the same fp32
// exponent (l - l_max) / T), so the kept set is exactly the scalar path's. Recomputes the block
// sums. logits: [vocab] the values the weights came from (-inf: removed).
void certified_min_p(std::span<const float> logits, float l_max, float temperature, float min_p,
                     std::span<float> weights, BlockWeights& sums, const WeightBound& bound);

}  // namespace tessera::sampler
