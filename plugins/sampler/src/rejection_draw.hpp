// The draw of a row without top-k: an exact sample of softmax(l / T) that computes an exp for
// about one token in sixteen instead of for every token (option draw = "rejection", the default;
// docs/sampler.md "Rejection draw"); a top-p or min-p row passes over the proposals its kept set
// drops (kept_set.hpp).
//
// Rejection sampling (von Neumann 1951) from a piecewise-constant envelope: the row's columns fall
// into groups of at most 16 (plugin_abi.h TS_LOGIT_GROUP_*); group g of n_g columns whose largest
// logit is m_g gets the bound U_g = n_g * c_g with c_g = fma_exp_bound(m_g) >= every e(l_j) of the
// group (e = fma_exp_weight, the weight exp((l - l_max) / T); the bound is 2^(y log2 e) read off a
// float's bits, up to 6% above exp(y), at a quarter of e's cost: fma_exp.hpp); a group holding the
// row's max gets U_g = S_g, the sum of its weights, exactly, so a peaked row accepts at once. A
// proposal draws t uniform in [0, sum_g U_g), finds the group g whose segment holds it and the
// offset r in [0, U_g). In a bounded group r picks column k = floor(r / c_g) of the group and
// accepts it when r - k c_g < e(l_j): one logit read and one exp. In an exact group it returns the
// first column whose cumulative weight exceeds r. Either way a proposal returns column j with
// probability e(l_j) / sum U, so an accepted one is distributed exactly as e(l_j) / sum_k e(l_k);
// it is accepted with probability sum S / sum U >= 1 / 17 (a group's weights sum to at least its
// largest, and c_g is at most 6.2% above that), ~0.4 on flat rows.
// Cost: an exp bound per group (1 / 16 of the row, from the group maxima the host's vocabulary
// head found while writing the logits, or one pass of the sampler's own), 16 exps for the max's
// group and one cache line and one exp per proposal.
//
// The tokens differ from the inverse-CDF draw's (draw = "inverse_cdf") for the same seed; both
// are exact draws from the same distribution. Proposal i uses uniform i of the row's own stream,
// (seed, rng_counter) (proposal_uniform), so the row's token is still a pure function of its
// logits, parameters, seed and counter.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tessera::sampler {

class KeptSet;  // kept_set.hpp

// 16 values (a block's bounds, or the kept set's lanes) summed as a fixed tree: the same sum on
// every CPU, no chain of 16 adds.
[[gnu::always_inline]] inline double tree_sum(const double* v) {
  return (((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]))) +
         (((v[8] + v[9]) + (v[10] + v[11])) + ((v[12] + v[13]) + (v[14] + v[15])));
}

inline constexpr int kMaxRejectionProposals = 1024;  // all rejected: probability < (16/17)^1024

// Proposals whose place in the envelope build_envelope finds, and whose logits it asks for: a
// row's first proposal is accepted with probability sum S / sum U (~0.4 on the 50m model's rows,
// 2.4 proposals per row; P(a third or fourth) ~0.36, ~0.2). Two ahead leave the later proposals'
// misses in the open: with four, 64 cold Gaussian rows are ~15% cheaper on a Zen 3 whose cores
// trade a cache line in ~0.5 µs (`tessera bench sampler --vocab 16384 --hints groups --settings
// t1`: 1 thread cold 168-178 µs against 203 with two); six gain little more.
inline constexpr int kProposalsAhead = 4;

// Where t falls in an envelope: group g (-1: nowhere, t rounded past a segment) and the offset r
// in [0, U_g); in a bounded group also the column r picks (-1: rounding put it past the group)
// and the rest of r its weight must exceed.
struct ProposalPlace {
  int64_t group = -1;
  double r = 0.0;
  bool exact = false;  // a group holding the row's max: its columns' weights are scanned
  int64_t column = -1;
  double rest = 0.0;
};

// A row's envelope: what its proposals draw from.
struct RejectionEnvelope {
  std::vector<float> group_cap;  // [groups] c_g = fma_exp_bound(m_g): U_g follows from it (.cpp)
  std::vector<std::pair<int64_t, double>> exact;  // groups holding the max: (g, U_g = S_g)
  std::vector<double> block_prefix;               // [blocks] sum of U over blocks 0..b
  double total = 0.0;                             // sum U
  ProposalPlace ahead[kProposalsAhead];           // where proposal i's t = uniform i * total falls
};

// Proposal i's uniform in [0, 1): draw rng_counter of the request's stream for i = 0, then a
// SplitMix64 stream keyed by that draw's 64 bits.
[[nodiscard]] double proposal_uniform(uint64_t seed, uint64_t rng_counter, int proposal);

// logits: [vocab] finite (penalised when penalties apply); group_max: their group maxima
// (group_scan.hpp); l_max = max of logits; temperature > 0. Fills env and asks for the logits
// its first kProposalsAhead proposals read (hints: a caller with other work to do before
// draw_proposals overlaps their misses with it; StandardSampler builds the next row's envelope).
void build_envelope(std::span<const float> logits, std::span<const float> group_max, float l_max,
                    float temperature, uint64_t seed, uint64_t rng_counter, RejectionEnvelope& env);

// The proposals on env, built by build_envelope from the same arguments: the first accepted one
// that `kept` holds (every accepted one when kept is null: a row without top-p or min-p), or -1
// when max_proposals proposals were all rejected (the caller then draws another way).
[[nodiscard]] int32_t draw_proposals(std::span<const float> logits, float l_max, float temperature,
                                     uint64_t seed, uint64_t rng_counter,
                                     const RejectionEnvelope& env, KeptSet* kept = nullptr,
                                     int max_proposals = kMaxRejectionProposals);

// build_envelope, then draw_proposals.
[[nodiscard]] int32_t rejection_draw(std::span<const float> logits,
                                     std::span<const float> group_max, float l_max,
                                     float temperature, uint64_t seed, uint64_t rng_counter,
                                     RejectionEnvelope& env, KeptSet* kept = nullptr,
                                     int max_proposals = kMaxRejectionProposals);

}  // namespace tessera::sampler
