// The coupled draw (option draw = "race"): an exponential race, i.e. the Gumbel-max trick, with
// noise that is a pure function of (seed, rng_counter, token id). Token j competes with the score
//   s_j = (l_j - l_max) / T + G_j,   G_j = -log(E_j),   E_j = -log(u_j),
// u_j uniform on (0, 1), all independent; the row's token is the argmax of s_j over the kept
// tokens (lowest id among equal scores). G_j is a standard Gumbel variate, so the argmax is
// distributed exactly as the softmax of the kept logits at temperature T (E. J. Gumbel 1954; the
// "Gumbel-max trick", e.g. Maddison, Tarlow & Minka, "A* Sampling", NeurIPS 2014): equivalently
// the first of independent exponential clocks of rates exp((l_j - l_max) / T) to ring.
//
// Why: two rows that differ a little get the same noise, so their tokens differ only where the
// argmax of the scores moves, which happens with probability at most 2 TV / (1 + TV) for
// distributions TV apart (docs/ab.md "Coupling"). An A/B of two arms whose logits differ by
// rounding then measures the arms, not the sampler.
//
// Noise, drawn a column group at a time so that a group that cannot win costs one hash (the
// ABI's groups, plugin_abi.h: group g holds the n_g <= 16 columns of its lane in a block of 256).
// With b = counter_bits(seed, rng_counter), U(x) = (2 (x >> 12) + 1) 2^-53 (in (0, 1)) and
// mix64 SplitMix64's finaliser:
//   - the group's largest uniform is V^(1/n_g), V = U(mix64(b + (2g + 1) gamma)): the max of n
//     independent uniforms has P(max <= x) = x^n; so its E is E_top = -log(V) / n_g;
//   - it belongs to member i = floor(n_g h / 2^64), h = mix64(b + (2g + 2) gamma) (uniform);
//   - every other member j has u_j = V^(1/n_g) W_j, W_j = U(mix64(b' + (j + 1) gamma)) with
//     b' = mix64(b ^ kMemberKey): independent uniforms below the max; so E_j = E_top - log(W_j).
// Together: n_g independent uniforms, a function of (seed, rng_counter, column) only.
//
// Cost: per group its max logit (the host's or the row's scan) and one hash, which give an upper
// bound of the group's best score; the group of the largest bound races first, then only the
// groups whose bound can still beat the best score (exact: the bounds are upper bounds) take a
// log for their top variate, and only those whose top variate can win draw their members.
#pragma once

#include <cstdint>
#include <span>

#include "counter_rng.hpp"

namespace tessera::sampler {

// logits: [vocab] the penalised logits (removed top-k tokens may be -inf); l_max their max.
// group_max: empty, or [logit_group_count(vocab)] upper bounds of each column group's logits
// (group_scan.hpp: the row's own or the host's maxima), which spare the race a pass over the
// logits. kept: empty (every finite logit competes) or [vocab] weights of which only the positive
// ones compete (the truncated row's kept set, truncation.hpp); the argmax column must compete.
// bounds: [logit_group_count(vocab)] scratch. Returns the token; the maxima change nothing but the
// time.
[[nodiscard]] int32_t race_draw(std::span<const float> logits, float l_max, float temperature,
                                uint64_t seed, uint64_t rng_counter,
                                std::span<const float> group_max, std::span<const float> kept,
                                std::span<double> bounds) noexcept;

}  // namespace tessera::sampler
