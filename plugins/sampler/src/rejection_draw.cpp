#include "rejection_draw.hpp"

#include <algorithm>

#include "counter_rng.hpp"
#include "fma_exp.hpp"
#include "group_scan.hpp"

namespace tessera::sampler {
namespace {

constexpr int64_t kLanes = TS_LOGIT_GROUP_LANES;
constexpr int64_t kBlock = TS_LOGIT_GROUP_BLOCK;
constexpr int64_t kFullGroup = kBlock / kLanes;  // columns of a group in a full block
// e is within 1e-7 of exp (fma_exp.hpp), so e(l_j) <= e(m_g) (1 + 1e-7) / (1 - 1e-7) for l_j <=
// m_g.
constexpr double kSlack = 1.0 + 0x1.0p-20;

// Columns of group `lane` in a block of `columns` (< kBlock only for the last block).
int64_t group_size(int64_t lane, int64_t columns) {
  return columns > lane ? (columns - lane + kLanes - 1) / kLanes : 0;
}

// Fills the bounds and the block prefix sums; returns sum U.
double envelope(int64_t vocab, std::span<const float> group_max, float l_max, float temperature,
                RejectionScratch& s) {
  const int64_t groups = logit_group_count(vocab);
  const int64_t blocks = groups / kLanes;
  s.group_weight.resize(static_cast<size_t>(groups));
  s.bound.resize(static_cast<size_t>(groups));
  s.block_prefix.resize(static_cast<size_t>(blocks));
  fma_exp_weights(group_max.data(), groups, l_max, temperature, s.group_weight.data());
  double total = 0.0;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t columns = std::min(kBlock, vocab - b * kBlock);
    double* u = s.bound.data() + b * kLanes;
    const float* e = s.group_weight.data() + b * kLanes;
    for (int64_t l = 0; l < kLanes; ++l) {
      const int64_t n = columns == kBlock ? kFullGroup : group_size(l, columns);
      u[l] = static_cast<double>(n) * static_cast<double>(e[l]) * kSlack;
    }
    // A fixed tree: the same sum on every CPU, and no chain of 16 dependent adds.
    double pair[kLanes / 2];
    for (int64_t l = 0; l < kLanes / 2; ++l) {
      pair[l] = u[2 * l] + u[2 * l + 1];
    }
    const double block =
        ((pair[0] + pair[1]) + (pair[2] + pair[3])) + ((pair[4] + pair[5]) + (pair[6] + pair[7]));
    total += block;
    s.block_prefix[static_cast<size_t>(b)] = total;
  }
  return total;
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

int32_t rejection_draw(std::span<const float> logits, std::span<const float> group_max, float l_max,
                       float temperature, uint64_t seed, uint64_t rng_counter,
                       RejectionScratch& scratch, int max_proposals) {
  const auto vocab = static_cast<int64_t>(logits.size());
  const double total = envelope(vocab, group_max, l_max, temperature, scratch);
  const std::vector<double>& prefix = scratch.block_prefix;
  for (int proposal = 0; proposal < max_proposals; ++proposal) {
    const double t = proposal_uniform(seed, rng_counter, proposal) * total;
    const auto block_it = std::upper_bound(prefix.begin(), prefix.end(), t);
    if (block_it == prefix.end()) {
      continue;  // t rounded up to the total: no segment holds it
    }
    const int64_t b = block_it - prefix.begin();
    double r = b == 0 ? t : t - prefix[static_cast<size_t>(b - 1)];
    const double* u = scratch.bound.data() + b * kLanes;
    int64_t lane = 0;
    for (; lane < kLanes && r >= u[lane]; ++lane) {
      r -= u[lane];
    }
    if (lane == kLanes) {
      continue;  // rounding: r is past the block's last bound
    }
    // The group's columns, lane + k * kLanes of the block, and their weights.
    const int64_t first = b * kBlock + lane;
    float x[kFullGroup];
    float w[kFullGroup];
    int64_t n = 0;
    for (int64_t c = first; c < vocab && n < kFullGroup; c += kLanes) {
      x[n++] = logits[static_cast<size_t>(c)];
    }
    fma_exp_weights(x, n, l_max, temperature, w);
    double cumulative = 0.0;
    for (int64_t k = 0; k < n; ++k) {
      cumulative += static_cast<double>(w[k]);
      if (r < cumulative) {
        return static_cast<int32_t>(first + k * kLanes);
      }
    }
  }
  return -1;
}

}  // namespace tessera::sampler
