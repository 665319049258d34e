#include "rejection_draw.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "counter_rng.hpp"
#include "fma_exp.hpp"
#include "group_scan.hpp"
#include "kept_set.hpp"
#include "row_scan.hpp"
#include "target_clones.hpp"  // TS_SAMPLER_CLONES: one clone per x86-64 level

namespace tessera::sampler {
namespace {

constexpr int64_t kLanes = TS_LOGIT_GROUP_LANES;
constexpr int64_t kBlock = TS_LOGIT_GROUP_BLOCK;
constexpr int64_t kFullGroup = kBlock / kLanes;  // columns of a group in a full block

// Columns of group `lane` in a block of `columns` (< kBlock only for the last block).
int64_t group_size(int64_t lane, int64_t columns) {
  return columns > lane ? (columns - lane + kLanes - 1) / kLanes : 0;
}

// The weights of group `lane` of block b (columns b * kBlock + lane + k * kLanes) into w, their
// count returned.
int64_t group_weights(std::span<const float> logits, int64_t b, int64_t lane, float l_max,
                      float temperature, float* w) {
  const auto vocab = static_cast<int64_t>(logits.size());
  float x[kFullGroup];
  int64_t n = 0;
  for (int64_t c = b * kBlock + lane; c < vocab && n < kFullGroup; c += kLanes) {
    x[n++] = logits[static_cast<size_t>(c)];
  }
  fma_exp_weights(x, n, l_max, temperature, w);
  return n;
}

// The sum of a group's weights in column order: the bound of a group holding the row's max, and
// what a proposal's offset is compared with (the same sum, so such a group accepts every time).
double group_weight_sum(std::span<const float> logits, int64_t b, int64_t lane, float l_max,
                        float temperature) {
  float w[kFullGroup];
  const int64_t n = group_weights(logits, b, lane, l_max, temperature, w);
  double sum = 0.0;
  for (int64_t k = 0; k < n; ++k) {
    sum += static_cast<double>(w[k]);
  }
  return sum;
}

// The bound of a group of a full block: 16 c_g (exact).
constexpr double kFullFactor = static_cast<double>(kFullGroup);
static_assert((kFullGroup & (kFullGroup - 1)) == 0, "four_block_sums scales sums, not bounds");

// Full blocks' sums, four blocks at a time: the fixed tree of tree_sum in four-double vectors.
// (Left to GCC, the one-block loop was vectorised across eight blocks with a transpose of ~150
// instructions a block; written per block in vectors, most of its time went to cross-lane
// permutes and the last horizontal adds.)
using Doubles = double __attribute__((vector_size(32)));
using Floats4 = float __attribute__((vector_size(16)));

// Four blocks' sums at once, lane j of every vector holding block j: the four blocks' bounds
// transposed as floats (4 x 4 at a time, cheap in-register shuffles), so every addition of the
// tree is one vertical add for the four blocks and the last one needs no horizontal step. The
// factor (16, a power of 2) scales the sum instead of every bound: exactly the same values, as
// scaling by a power of 2 commutes with rounding. Same operands in the same tree as tree_sum, so
// the same bits (sampler_envelope_test).
[[gnu::always_inline]] inline void four_block_sums(const float* e, Doubles factor, double* sums) {
  Doubles v[kLanes];  // v[l] = the bounds U_l of the four blocks
  for (int64_t q = 0; q < 4; ++q) {
    Floats4 r[4];
    for (int64_t j = 0; j < 4; ++j) {
      std::memcpy(&r[j], e + j * kLanes + q * 4, sizeof r[j]);
    }
    const Floats4 t0 = __builtin_shufflevector(r[0], r[1], 0, 4, 1, 5);
    const Floats4 t1 = __builtin_shufflevector(r[2], r[3], 0, 4, 1, 5);
    const Floats4 t2 = __builtin_shufflevector(r[0], r[1], 2, 6, 3, 7);
    const Floats4 t3 = __builtin_shufflevector(r[2], r[3], 2, 6, 3, 7);
    const Floats4 c[4] = {
        __builtin_shufflevector(t0, t1, 0, 1, 4, 5), __builtin_shufflevector(t0, t1, 2, 3, 6, 7),
        __builtin_shufflevector(t2, t3, 0, 1, 4, 5), __builtin_shufflevector(t2, t3, 2, 3, 6, 7)};
    for (int64_t i = 0; i < 4; ++i) {
      v[q * 4 + i] = __builtin_convertvector(c[i], Doubles);
    }
  }
  Doubles p[8];
  for (int64_t k = 0; k < 8; ++k) {
    p[k] = v[2 * k] + v[2 * k + 1];
  }
  const Doubles q0 = p[0] + p[1], q1 = p[2] + p[3], q2 = p[4] + p[5], q3 = p[6] + p[7];
  const Doubles s = ((q0 + q1) + (q2 + q3)) * factor;
  std::memcpy(sums, &s, sizeof s);
}

TS_SAMPLER_CLONES void full_block_sums(const float* e, int64_t blocks, double* block_sum) {
  const Doubles factor = Doubles{} + kFullFactor;
  int64_t b = 0;
  for (; b + 4 <= blocks; b += 4) {
    four_block_sums(e + b * kLanes, factor, block_sum + b);
  }
  for (; b < blocks; ++b) {  // the last one to three
    double u[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) {
      u[l] = static_cast<double>(e[b * kLanes + l]) * kFullFactor;
    }
    block_sum[b] = tree_sum(u);
  }
}

// The 16 bounds U_g of block b into u: n_g c_g, or the exact sum of a group holding the row's max.
[[gnu::always_inline]] inline void block_bounds(const RejectionEnvelope& env, int64_t vocab,
                                                int64_t b, double* u) {
  const float* e = env.group_cap.data() + b * kLanes;  // c_g of the block's groups
  const int64_t columns = std::min(kBlock, vocab - b * kBlock);
  if (columns == kBlock) {
    for (int64_t l = 0; l < kLanes; ++l) {
      u[l] = static_cast<double>(e[l]) * kFullFactor;
    }
  } else {
    for (int64_t l = 0; l < kLanes; ++l) {
      u[l] = static_cast<double>(group_size(l, columns)) * static_cast<double>(e[l]);
    }
  }
  for (const auto& [group, sum] : env.exact) {
    if (group / kLanes == b) {
      u[group % kLanes] = sum;
    }
  }
}

// Fills the group weights, the exact groups and the block prefix sums; returns sum U.
double envelope(std::span<const float> logits, std::span<const float> group_max, float l_max,
                float temperature, RejectionEnvelope& s) {
  const auto vocab = static_cast<int64_t>(logits.size());
  const int64_t groups = logit_group_count(vocab);
  const int64_t blocks = groups / kLanes;
  const int64_t full_blocks = vocab / kBlock;
  s.group_cap.resize(static_cast<size_t>(groups));
  s.block_prefix.resize(static_cast<size_t>(blocks));
  s.exact.clear();
  // The first group holding the row's max has its weights summed below. Its 16 columns are one
  // per cache line of a 1 KiB block, which the host's head wrote a while ago (often on the other
  // core): asking for the block now overlaps those misses with the pass over the group maxima.
  const int32_t first_max = first_index_of(group_max, l_max);
  if (first_max >= 0) {
    prefetch_logit_block(logits, first_max / kLanes);
  }
  fma_exp_bounds(group_max.data(), groups, l_max, temperature, s.group_cap.data());
  double* sums = s.block_prefix.data();  // block sums first, prefix sums below
  full_block_sums(s.group_cap.data(), full_blocks, sums);
  // A group holding the row's max gets its exact weight instead of its bound, so a peaked row
  // (most of the mass in one token) accepts its proposals instead of rejecting ~15 in 16.
  for (int64_t g = first_max; g >= 0;) {
    s.exact.emplace_back(g, group_weight_sum(logits, g / kLanes, g % kLanes, l_max, temperature));
    const int32_t next =
        g + 1 < groups ? first_index_of(group_max.subspan(static_cast<size_t>(g + 1)), l_max) : -1;
    g = next < 0 ? -1 : g + 1 + next;
  }
  // The partial last block, and the blocks holding exact groups, summed from their bounds.
  double u[kLanes];
  for (int64_t b = full_blocks; b < blocks; ++b) {
    block_bounds(s, vocab, b, u);
    sums[b] = tree_sum(u);
  }
  for (const auto& [group, sum] : s.exact) {
    const int64_t b = group / kLanes;
    if (b < full_blocks) {
      block_bounds(s, vocab, b, u);
      sums[b] = tree_sum(u);
    }
  }
  double total = 0.0;
  for (int64_t b = 0; b < blocks; ++b) {
    total += sums[b];
    sums[b] = total;
  }
  return total;
}

// The block whose segment holds t (-1 when t rounded up to the total: no segment holds it).
// std::upper_bound without branches on the data (P.-V. Khuong and P. Morin, "Array layouts for
// comparison-based searching", 2017: halve the range with a conditional move): t is uniform over
// the prefix sums, so upper_bound's branches were mispredicted about half the time.
[[gnu::always_inline]] inline int64_t block_of(const std::vector<double>& prefix, double t) {
  const double* base = prefix.data();
  auto n = static_cast<int64_t>(prefix.size());
  if (n == 0) {
    return -1;
  }
  while (n > 1) {
    const int64_t half = n / 2;
    base = base[half] <= t ? base + half : base;
    n -= half;
  }
  const int64_t b = (base - prefix.data()) + (*base <= t ? 1 : 0);
  return b == static_cast<int64_t>(prefix.size()) ? -1 : b;
}

bool is_exact(const RejectionEnvelope& env, int64_t group) {
  return std::any_of(env.exact.begin(), env.exact.end(),
                     [&](const auto& e) { return e.first == group; });
}

// A bounded group's column for p.r: k = floor(r / c_g), c_g the group's exp bound, and the rest
// r - k c_g (one rounding: fma), which the column's weight must exceed. Column -1 when rounding put
// k past the group's last column.
[[gnu::always_inline]] inline void bounded_column(const RejectionEnvelope& env, int64_t vocab,
                                                  ProposalPlace& p) {
  const int64_t b = p.group / kLanes;
  const int64_t lane = p.group % kLanes;
  const double c = static_cast<double>(env.group_cap[static_cast<size_t>(p.group)]);
  const double k = std::floor(p.r / c);
  if (k >= static_cast<double>(group_size(lane, std::min(kBlock, vocab - b * kBlock)))) {
    return;
  }
  p.rest = std::fma(-k, c, p.r);
  p.column = b * kBlock + lane + static_cast<int64_t>(k) * kLanes;
}

// The block whose prefix sum first exceeds t, then the group whose bound the rest falls in (the
// block's bounds subtracted in lane order), and in a bounded group the column.
TS_SAMPLER_CLONES ProposalPlace place_of(const RejectionEnvelope& env, int64_t vocab, double t) {
  const int64_t b = block_of(env.block_prefix, t);
  if (b < 0) {
    return {};
  }
  double r = b == 0 ? t : t - env.block_prefix[static_cast<size_t>(b - 1)];
  double u[kLanes];
  block_bounds(env, vocab, b, u);
  int64_t lane = 0;
  for (; lane < kLanes && r >= u[lane]; ++lane) {
    r -= u[lane];
  }
  if (lane == kLanes) {
    return {};  // rounding: r is past the block's last bound
  }
  ProposalPlace p;
  p.group = b * kLanes + lane;
  p.r = r;
  p.exact = is_exact(env, p.group);
  if (!p.exact) {
    bounded_column(env, vocab, p);
  }
  return p;
}

// The proposal's token, or -1 when it is rejected.
int32_t decide(std::span<const float> logits, float l_max, float temperature,
               const ProposalPlace& p) {
  if (p.group < 0) {
    return -1;
  }
  if (!p.exact) {
    const bool accepted =
        p.column >= 0 && p.rest < static_cast<double>(fma_exp_weight(
                                      logits[static_cast<size_t>(p.column)], l_max, temperature));
    return accepted ? static_cast<int32_t>(p.column) : -1;
  }
  // An exact group: its columns (lane + k * kLanes of the block) in order, the first whose
  // cumulative weight exceeds r.
  const int64_t b = p.group / kLanes;
  const int64_t lane = p.group % kLanes;
  float w[kFullGroup];
  const int64_t n = group_weights(logits, b, lane, l_max, temperature, w);
  double cumulative = 0.0;
  for (int64_t k = 0; k < n; ++k) {
    cumulative += static_cast<double>(w[k]);
    if (p.r < cumulative) {
      return static_cast<int32_t>(b * kBlock + lane + k * kLanes);
    }
  }
  return -1;
}

}  // namespace

double proposal_uniform(uint64_t seed, uint64_t rng_counter, int proposal) {
  if (proposal == 0) {
    return counter_uniform(seed, rng_counter);
  }
  const uint64_t key = counter_bits(seed, rng_counter);
  const uint64_t bits = splitmix64_mix(key + static_cast<uint64_t>(proposal) * kSplitMixGamma);
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

void build_envelope(std::span<const float> logits, std::span<const float> group_max, float l_max,
                    float temperature, uint64_t seed, uint64_t rng_counter,
                    RejectionEnvelope& env) {
  env.total = envelope(logits, group_max, l_max, temperature, env);
  const auto vocab = static_cast<int64_t>(logits.size());
  for (int proposal = 0; proposal < kProposalsAhead; ++proposal) {
    const ProposalPlace p =
        place_of(env, vocab, proposal_uniform(seed, rng_counter, proposal) * env.total);
    env.ahead[proposal] = p;
    if (p.column >= 0) {  // an exact group's columns were read for its sum
      __builtin_prefetch(logits.data() + p.column);
    }
  }
}

int32_t draw_proposals(std::span<const float> logits, float l_max, float temperature, uint64_t seed,
                       uint64_t rng_counter, const RejectionEnvelope& env, KeptSet* kept,
                       int max_proposals) {
  const auto vocab = static_cast<int64_t>(logits.size());
  for (int proposal = 0; proposal < max_proposals; ++proposal) {
    const ProposalPlace p =
        proposal < kProposalsAhead
            ? env.ahead[proposal]
            : place_of(env, vocab, proposal_uniform(seed, rng_counter, proposal) * env.total);
    const int32_t token = decide(logits, l_max, temperature, p);
    if (token >= 0 && (kept == nullptr || kept->keeps(token))) {
      return token;
    }
  }
  return -1;
}

int32_t rejection_draw(std::span<const float> logits, std::span<const float> group_max, float l_max,
                       float temperature, uint64_t seed, uint64_t rng_counter,
                       RejectionEnvelope& env, KeptSet* kept, int max_proposals) {
  build_envelope(logits, group_max, l_max, temperature, seed, rng_counter, env);
  return draw_proposals(logits, l_max, temperature, seed, rng_counter, env, kept, max_proposals);
}

}  // namespace tessera::sampler
