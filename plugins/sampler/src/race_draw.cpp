#include "race_draw.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "group_scan.hpp"
#include "target_clones.hpp"

namespace tessera::sampler {
namespace {

constexpr int64_t kLanes = TS_LOGIT_GROUP_LANES;  // groups per block, columns per full group
constexpr int64_t kBlock = TS_LOGIT_GROUP_BLOCK;
constexpr uint64_t kMemberKey = 0x6A09E667F3BCC909ULL;  // frac(sqrt 2): the members' stream
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// (2 (bits >> 12) + 1) 2^-53: 52 random bits, in (0, 1) open at both ends.
double open_uniform(uint64_t bits) noexcept {
  return static_cast<double>(((bits >> 12) << 1) | 1) * 0x1.0p-53;
}

uint64_t group_top_bits(uint64_t row_bits, int64_t group) noexcept {
  return splitmix64_mix(row_bits + static_cast<uint64_t>(2 * group + 1) * kSplitMixGamma);
}
uint64_t group_pick_bits(uint64_t row_bits, int64_t group) noexcept {
  return splitmix64_mix(row_bits + static_cast<uint64_t>(2 * group + 2) * kSplitMixGamma);
}
uint64_t member_bits(uint64_t member_key, int64_t column) noexcept {
  return splitmix64_mix(member_key + static_cast<uint64_t>(column + 1) * kSplitMixGamma);
}

// The top bits (>> 12) of the 16 groups of block `block`, for a cloned, vectorised loop.
TS_SAMPLER_CLONES void block_top_bits(uint64_t row_bits, int64_t block, uint64_t* k) noexcept {
  for (int64_t i = 0; i < kLanes; ++i) {
    k[i] = splitmix64_mix(row_bits +
                          static_cast<uint64_t>(2 * (block * kLanes + i) + 1) * kSplitMixGamma) >>
           12;
  }
}

// The max logit of each of the 16 groups of a full block: elementwise maxima of 16 vectors.
TS_SAMPLER_CLONES void block_group_max(const float* logits, float* group_max) noexcept {
  float most[kLanes];
  for (int64_t i = 0; i < kLanes; ++i) most[i] = logits[i];
  for (int64_t m = 1; m < kLanes; ++m) {
    for (int64_t i = 0; i < kLanes; ++i) {
      const float l = logits[m * kLanes + i];
      most[i] = l > most[i] ? l : most[i];
    }
  }
  for (int64_t i = 0; i < kLanes; ++i) group_max[i] = most[i];
}

// For the 16 groups of a block (every group full when n == 16): an upper bound of each group's
// best score, (most - l_max) / T + top_gumbel_bound(k, n) as below, in a cloned loop (the floor
// of log2 from the exponent of the double m, exact below 2^53).
TS_SAMPLER_CLONES void block_bounds(const float* most, const uint64_t* k, double top,
                                    double inverse_t, double log_n, double* bound) noexcept {
  for (int64_t i = 0; i < kLanes; ++i) {
    const uint64_t m = (uint64_t{1} << 53) - 2 * k[i] - 1;
    const double md = static_cast<double>(m);
    uint64_t bits = 0;
    __builtin_memcpy(&bits, &md, sizeof bits);
    const auto floor_log2 = static_cast<double>(static_cast<int64_t>(bits >> 52) - 1023);
    bound[i] = (static_cast<double>(most[i]) - top) * inverse_t + log_n +
               0.6931471805599453 * (53.0 - floor_log2);
  }
}

// An upper bound of the group's largest variate -log(-log(V) / n) from the integer k = top bits
// >> 12 alone, loose by less than ln 2 + ln n: -log(V) >= 1 - V = m 2^-53 with
// m = 2^53 - 2k - 1 >= 1, so -log(-log(V) / n) <= ln n + ln 2 (53 - floor(log2 m)). The 1e-9
// covers the rounding of the computed variate.
double top_gumbel_bound(uint64_t k, int64_t n) noexcept {
  static const auto log_n = [] {
    std::array<double, kLanes + 1> table{};
    for (int64_t i = 1; i <= kLanes; ++i) table[i] = std::log(static_cast<double>(i)) + 1e-9;
    return table;
  }();
  const uint64_t m = (uint64_t{1} << 53) - 2 * k - 1;
  const int floor_log2 = 63 - __builtin_clzll(m);
  return log_n[n] + 0.6931471805599453 * (53 - floor_log2);
}

// A row's race: the scores of the columns it draws, the best so far.
class Race {
 public:
  Race(std::span<const float> logits, float l_max, float temperature, uint64_t seed,
       uint64_t rng_counter, std::span<const float> kept)
      : logits_(logits),
        kept_(kept),
        top_(l_max),
        t_(temperature),
        inverse_t_(1.0 / t_),
        row_bits_(counter_bits(seed, rng_counter)),
        member_key_(splitmix64_mix(row_bits_ ^ kMemberKey)) {}

  uint64_t row_bits() const { return row_bits_; }
  double top() const { return top_; }
  double inverse_t() const { return inverse_t_; }
  // Whether a group whose best score is at most `bound` can still win (with the margin below).
  bool may_win(double bound) const {
    return bound >= best_score_ - 1e-9 * (1.0 + std::abs(bound) + std::abs(best_score_));
  }
  int32_t best() const { return static_cast<int32_t>(best_); }

  // Group `group` (block * 16 + lane) of n members, whose largest logit is at most `most`: passed
  // over when it cannot win, else its top variate, and when that can win, every member.
  void run_group(int64_t group, int64_t n, float most, uint64_t top_k) {
    const double y_max = (static_cast<double>(most) - top_) * inverse_t_;  // within the margin
    // The margin, far above the scores' rounding (~1e-14), keeps every group that could win.
    const double need =
        best_score_ - y_max - 1e-9 * (1.0 + std::abs(y_max) + std::abs(best_score_));
    if (top_gumbel_bound(top_k, n) < need) {
      return;
    }
    const double e_top = -std::log(open_uniform(top_k << 12)) / static_cast<double>(n);
    if (-std::log(e_top) < need) {
      return;  // every member's variate is below the top one's
    }
    const auto pick = static_cast<int64_t>(
        (static_cast<unsigned __int128>(group_pick_bits(row_bits_, group)) * n) >> 64);
    // A member can win only with E_j <= exp(-need); E_j = E_top - log(W_j) >= E_top + 1 - W_j, so
    // most members are passed over without a log or a read of their logit (a cache line each).
    // The factor covers the rounding of the two sums.
    const double most_e = std::exp(-need) * (1.0 + 1e-12);
    const int64_t first = (group / kLanes) * kBlock + group % kLanes;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = first + i * kLanes;
      double e = e_top;
      if (i != pick) {
        const double w = open_uniform(member_bits(member_key_, j));
        if (e_top + (1.0 - w) > most_e) {
          continue;
        }
        e = e_top - std::log(w);
      }
      if (!competes(j)) {
        continue;
      }
      const double s = (static_cast<double>(logits_[j]) - top_) / t_ - std::log(e);
      if (s > best_score_ || (s == best_score_ && j < best_)) {
        best_ = j;
        best_score_ = s;
      }
    }
  }

 private:
  bool competes(int64_t j) const {
    return kept_.empty() ? std::isfinite(logits_[j]) : kept_[j] > 0.0f;
  }

  std::span<const float> logits_, kept_;
  double top_, t_, inverse_t_;
  uint64_t row_bits_, member_key_;
  int64_t best_ = -1;
  double best_score_ = -std::numeric_limits<double>::infinity();
};

// Members of the group at `lane` of a block holding `columns` columns.
int64_t group_size(int64_t columns, int64_t lane) {
  return lane < columns ? std::min(kLanes, (columns - lane + kLanes - 1) / kLanes) : 0;
}

// The largest logit of group g's n members.
float group_max_of(std::span<const float> logits, int64_t g, int64_t n) {
  const int64_t first = (g / kLanes) * kBlock + g % kLanes;
  float most = kNegInf;
  for (int64_t i = 0; i < n; ++i) most = std::max(most, logits[first + i * kLanes]);
  return most;
}

}  // namespace

int32_t race_draw(std::span<const float> logits, float l_max, float temperature, uint64_t seed,
                  uint64_t rng_counter, std::span<const float> group_max_of_row,
                  std::span<const float> kept, std::span<double> bounds) noexcept {
  const auto vocab = static_cast<int64_t>(logits.size());
  const int64_t blocks = (vocab + kBlock - 1) / kBlock;
  Race race(logits, l_max, temperature, seed, rng_counter, kept);
  // Pass 1: every group's bound (one hash per group), and the group of the largest bound.
  float most[kLanes];
  uint64_t top_k[kLanes];
  int64_t first_group = -1;
  double first_bound = -std::numeric_limits<double>::infinity();
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t begin = block * kBlock;
    const int64_t columns = std::min(kBlock, vocab - begin);
    if (!group_max_of_row.empty()) {
      std::copy_n(group_max_of_row.data() + block * kLanes, kLanes, most);
    } else if (columns == kBlock) {
      block_group_max(logits.data() + begin, most);
    } else {
      std::fill_n(most, kLanes, kNegInf);
      for (int64_t c = 0; c < columns; ++c) {
        most[c % kLanes] = std::max(most[c % kLanes], logits[begin + c]);
      }
    }
    block_top_bits(race.row_bits(), block, top_k);
    double* bound = bounds.data() + block * kLanes;
    if (columns == kBlock) {
      block_bounds(most, top_k, race.top(), race.inverse_t(), std::log(16.0) + 1e-9, bound);
    }
    for (int64_t lane = 0; lane < kLanes; ++lane) {
      const int64_t n = group_size(columns, lane);
      if (n == 0 || most[lane] == kNegInf) {
        bound[lane] = -std::numeric_limits<double>::infinity();
      } else if (columns != kBlock) {
        bound[lane] = (static_cast<double>(most[lane]) - race.top()) * race.inverse_t() +
                      top_gumbel_bound(top_k[lane], n);
      }
      if (bound[lane] > first_bound) {
        first_bound = bound[lane];
        first_group = block * kLanes + lane;
      }
    }
  }
  // Pass 2: the most promising group first, so that the best score is close to its final value;
  // then every group whose bound can still win (a few). Which group goes first changes nothing
  // but the time: the scores are the same.
  auto run = [&](int64_t g) {
    const int64_t block = g / kLanes;
    const int64_t n = group_size(std::min(kBlock, vocab - block * kBlock), g % kLanes);
    const float group_most =
        group_max_of_row.empty() ? group_max_of(logits, g, n) : group_max_of_row[g];
    race.run_group(g, n, group_most, group_top_bits(race.row_bits(), g) >> 12);
  };
  if (first_group >= 0) {
    run(first_group);
  }
  for (int64_t g = 0; g < blocks * kLanes; ++g) {
    if (race.may_win(bounds[g])) {
      run(g);
    }
  }
  return race.best();
}

}  // namespace tessera::sampler
