// The coupled draw (option draw = "race"): an exponential race, i.e. the Gumbel-max trick, with
// noise that is a pure function of (seed, rng_counter, token id). Token j competes with the score
//   s_j = (l_j - l_max) / T + G_j,   G_j = -log(-log(u_j)),
// and the row's token is the argmax of s_j over the kept tokens (lowest id among equal scores).
// G_j is a standard Gumbel variate, so the argmax is distributed exactly as the softmax of the
// kept logits at temperature T (E. J. Gumbel 1954; the "Gumbel-max trick", e.g. Maddison, Tarlow &
// Minka, "A* Sampling", NeurIPS 2014): equivalently, argmin_j E_j / w_j with E_j = -log(u_j)
// exponential and w_j = exp((l_j - l_max) / T), the first to finish of independent exponential
// clocks of rates w_j.
//
// Why: two rows that differ a little get the same noise, so their tokens differ only where the
// argmax of the scores moves, which happens with probability at most the total-variation distance
// between their distributions (up to a factor ~2 for races; docs/ab.md "Coupling"). An A/B of two
// arms whose logits differ by rounding then measures the arms, not the sampler: the inverse CDF
// and the rejection draw map a tiny change of any weight (through the running sum or the
// envelope's total) to another token with a probability far above the change.
//
// Noise: with b = counter_bits(seed, rng_counter) (the row's 64 random bits, the same the other
// draws start from), u_j = (2k + 1) 2^-53 with k the top 52 bits of mix64(b + (j + 1) gamma): the
// (j + 1)-th output of a SplitMix64 stream keyed by b, in (0, 1) open at both ends.
//
// Cost: one pass finds each column group's max logit and largest noise (the ABI's groups of 16
// columns 16 apart); a group whose bound cannot beat the best score so far is passed over
// (skipping is exact: the bound is an upper bound), the few others compare each member's noise
// with the exact threshold, and only members above it take the two logs. About one mix64 per
// column and a handful of logs per row.
#pragma once

#include <cstdint>
#include <span>

#include "counter_rng.hpp"

namespace tessera::sampler {

// The 64 noise bits of column `token` in the row whose draw bits are `row_bits`.
[[nodiscard]] constexpr uint64_t race_noise_bits(uint64_t row_bits, int64_t token) noexcept {
  return splitmix64_mix(row_bits + static_cast<uint64_t>(token + 1) * kSplitMixGamma);
}

// G = -log(-log(u)) with u = (2k + 1) 2^-53, k = bits >> 12.
[[nodiscard]] double race_gumbel(uint64_t bits) noexcept;

// logits: [vocab] the penalised logits (removed top-k tokens may be -inf); l_max their max.
// group_max: empty, or [logit_group_count(vocab)] upper bounds of each column group's logits
// (group_scan.hpp: the row's own or the host's maxima), which spare the race reading the logits
// of groups that cannot win. kept: empty (every finite logit competes) or [vocab] weights of
// which only the positive ones compete (the truncated row's kept set, truncation.hpp); the
// argmax column must compete. Returns the token; the maxima change nothing but the time.
[[nodiscard]] int32_t race_draw(std::span<const float> logits, float l_max, float temperature,
                                uint64_t seed, uint64_t rng_counter,
                                std::span<const float> group_max,
                                std::span<const float> kept) noexcept;

}  // namespace tessera::sampler
