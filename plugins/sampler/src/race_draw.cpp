#include "race_draw.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "row_scan.hpp"
#include "target_clones.hpp"

namespace tessera::sampler {
namespace {

constexpr int64_t kLanes = 16;  // groups per span, columns per group

// The smallest k = bits >> 12 whose Gumbel variate can reach `need`, lowered by 4 units so that
// the roundings of the exps below never rule out a column that reaches it: G(u) >= need iff
// u >= exp(-exp(-need)), and u = (2k + 1) 2^-53.
uint64_t min_noise_index(double need) noexcept {
  const double theta = std::exp(-std::exp(-need));
  const double k = std::floor((theta * 0x1.0p53 - 1.0) / 2.0) - 4.0;
  return k <= 0.0 ? 0 : static_cast<uint64_t>(k);
}

constexpr int64_t kSpan = kLanes * kLanes;  // columns whose 16 groups one scan finds

// The 16 groups of the columns [begin, begin + kSpan) (all in the row): group `lane` holds the
// columns begin + lane + 16 m, m < 16 (the ABI's column groups, plugin_abi.h). Its max logit and
// its largest noise index, from elementwise maxima of 16 vectors (no horizontal reduction).
TS_SAMPLER_CLONES void scan_span(const float* logits, uint64_t row_bits, int64_t begin,
                                 float* group_max, uint64_t* group_noise) noexcept {
  float most[kLanes];
  uint64_t most_k[kLanes];
  for (int64_t i = 0; i < kLanes; ++i) {
    most[i] = logits[i];
    most_k[i] = race_noise_bits(row_bits, begin + i) >> 12;
  }
  for (int64_t m = 1; m < kLanes; ++m) {
    for (int64_t i = 0; i < kLanes; ++i) {
      const float l = logits[m * kLanes + i];
      const uint64_t k = race_noise_bits(row_bits, begin + m * kLanes + i) >> 12;
      most[i] = l > most[i] ? l : most[i];
      most_k[i] = k > most_k[i] ? k : most_k[i];
    }
  }
  for (int64_t i = 0; i < kLanes; ++i) {
    group_max[i] = most[i];
    group_noise[i] = most_k[i];
  }
}

// The noise half of scan_span, for a row whose group maxima are known.
TS_SAMPLER_CLONES void span_noise(uint64_t row_bits, int64_t begin,
                                  uint64_t* group_noise) noexcept {
  uint64_t most_k[kLanes];
  for (int64_t i = 0; i < kLanes; ++i) most_k[i] = race_noise_bits(row_bits, begin + i) >> 12;
  for (int64_t m = 1; m < kLanes; ++m) {
    for (int64_t i = 0; i < kLanes; ++i) {
      const uint64_t k = race_noise_bits(row_bits, begin + m * kLanes + i) >> 12;
      most_k[i] = k > most_k[i] ? k : most_k[i];
    }
  }
  for (int64_t i = 0; i < kLanes; ++i) group_noise[i] = most_k[i];
}

// The same for a last, partial span of `columns` < kSpan columns (empty groups: max -inf).
void scan_partial_span(const float* logits, int64_t columns, uint64_t row_bits, int64_t begin,
                       float* group_max, uint64_t* group_noise) noexcept {
  for (int64_t i = 0; i < kLanes; ++i) {
    group_max[i] = -std::numeric_limits<float>::infinity();
    group_noise[i] = 0;
  }
  for (int64_t c = 0; c < columns; ++c) {
    const int64_t lane = c % kLanes;
    group_max[lane] = std::max(group_max[lane], logits[c]);
    group_noise[lane] = std::max(group_noise[lane], race_noise_bits(row_bits, begin + c) >> 12);
  }
}

// An upper bound of race_gumbel(k << 12) from integer operations only, loose by less than
// ln 2: with u = (2k + 1) 2^-53, -log(u) >= 1 - u = m 2^-53 (m = 2^53 - 2k - 1 >= 1), so
// G = -log(-log(u)) <= -log(m 2^-53) = ln 2 (53 - log2 m) <= ln 2 (53 - floor(log2 m)). The
// 1e-9 covers the rounding of the computed G.
double gumbel_bound(uint64_t k) noexcept {
  const uint64_t m = (uint64_t{1} << 53) - 2 * k - 1;
  const int floor_log2 = 63 - __builtin_clzll(m);
  return 0.6931471805599453 * static_cast<double>(53 - floor_log2) + 1e-9;
}

}  // namespace

double race_gumbel(uint64_t bits) noexcept {
  const double u = static_cast<double>(((bits >> 12) << 1) | 1) * 0x1.0p-53;
  return -std::log(-std::log(u));
}

int32_t race_draw(std::span<const float> logits, float l_max, float temperature, uint64_t seed,
                  uint64_t rng_counter, std::span<const float> group_max_of_row,
                  std::span<const float> kept) noexcept {
  const auto vocab = static_cast<int64_t>(logits.size());
  const uint64_t row_bits = counter_bits(seed, rng_counter);
  const double top = l_max;
  const double t = temperature;
  const auto competes = [&](int64_t j) {
    return kept.empty() ? std::isfinite(logits[j]) : kept[j] > 0.0f;
  };
  const auto score = [&](int64_t j, uint64_t bits) {
    return (static_cast<double>(logits[j]) - top) / t + race_gumbel(bits);
  };
  // The race starts from the max column (it always competes: truncation keeps the most probable).
  int64_t best = first_index_of(logits, l_max);
  double best_score = score(best, race_noise_bits(row_bits, best));
  float group_max[kLanes];
  uint64_t group_noise[kLanes];
  for (int64_t span = 0; span < vocab; span += kSpan) {
    const int64_t columns = std::min(kSpan, vocab - span);
    if (!group_max_of_row.empty()) {
      std::copy_n(group_max_of_row.data() + span / kSpan * kLanes, kLanes, group_max);
      if (columns == kSpan) {
        span_noise(row_bits, span, group_noise);
      } else {
        float unused[kLanes];
        scan_partial_span(logits.data() + span, columns, row_bits, span, unused, group_noise);
      }
    } else if (columns == kSpan) {
      scan_span(logits.data() + span, row_bits, span, group_max, group_noise);
    } else {
      scan_partial_span(logits.data() + span, columns, row_bits, span, group_max, group_noise);
    }
    for (int64_t lane = 0; lane < kLanes; ++lane) {
      if (group_max[lane] == -std::numeric_limits<float>::infinity()) {
        continue;
      }
      // A member scores at most y_max + G. The margin (far above the scores' rounding, ~1e-14)
      // keeps every column whose computed score could reach the best.
      const double y_max = (static_cast<double>(group_max[lane]) - top) / t;
      const double need =
          best_score - y_max - 1e-9 * (1.0 + std::abs(y_max) + std::abs(best_score));
      if (gumbel_bound(group_noise[lane]) < need) {
        continue;
      }
      const uint64_t k_min = min_noise_index(need);
      if (group_noise[lane] < k_min) {
        continue;
      }
      for (int64_t j = span + lane; j < span + columns; j += kLanes) {
        const uint64_t bits = race_noise_bits(row_bits, j);
        if ((bits >> 12) < k_min || j == best || !competes(j)) {
          continue;
        }
        const double s = score(j, bits);
        if (s > best_score || (s == best_score && j < best)) {
          best = j;
          best_score = s;
        }
      }
    }
  }
  return static_cast<int32_t>(best);
}

}  // namespace tessera::sampler
