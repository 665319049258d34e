#include "race_draw.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "group_scan.hpp"
#include "row_scan.hpp"
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
    const int64_t first = (group / kLanes) * kBlock + group % kLanes;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = first + i * kLanes;
      if (!competes(j)) {
        continue;
      }
      const double e =
          i == pick ? e_top : e_top - std::log(open_uniform(member_bits(member_key_, j)));
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

}  // namespace

int32_t race_draw(std::span<const float> logits, float l_max, float temperature, uint64_t seed,
                  uint64_t rng_counter, std::span<const float> group_max_of_row,
                  std::span<const float> kept) noexcept {
  const auto vocab = static_cast<int64_t>(logits.size());
  Race race(logits, l_max, temperature, seed, rng_counter, kept);
  // A group holding the max first (truncation always keeps the most probable token), so that the
  // best score is high from the start and most groups are passed over on one hash. Which one
  // changes nothing but the time: every group is run below.
  const int64_t first_group = group_max_of_row.empty()
                                  ? logit_group_of(first_index_of(logits, l_max))
                                  : first_index_of(group_max_of_row, l_max);
  if (first_group >= 0) {
    const int64_t block = first_group / kLanes;
    race.run_group(first_group,
                   group_size(std::min(kBlock, vocab - block * kBlock), first_group % kLanes),
                   l_max, group_top_bits(race.row_bits(), first_group) >> 12);
  }
  float most[kLanes];
  uint64_t top_k[kLanes];
  for (int64_t block = 0; block * kBlock < vocab; ++block) {
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
    for (int64_t lane = 0; lane < kLanes; ++lane) {
      const int64_t n = group_size(columns, lane);
      if (n > 0 && most[lane] != kNegInf) {
        race.run_group(block * kLanes + lane, n, most[lane], top_k[lane]);
      }
    }
  }
  return race.best();
}

}  // namespace tessera::sampler
