#include "race_draw.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::sampler {
namespace {

constexpr int64_t kBlock = 16;  // columns per block whose max bounds its members' scores

// The largest Gumbel variate the noise can give (k = 2^52 - 1): no column whose score would need
// more can win.
double max_gumbel() noexcept {
  static const double value = race_gumbel(~uint64_t{0});
  return value;
}

// The smallest k = bits >> 12 whose Gumbel variate can reach `need`, lowered by 4 units so that
// the roundings of the exps below never rule out a column that reaches it: G(u) >= need iff
// u >= exp(-exp(-need)), and u = (2k + 1) 2^-53.
uint64_t min_noise_index(double need) noexcept {
  const double theta = std::exp(-std::exp(-need));
  const double k = std::floor((theta * 0x1.0p53 - 1.0) / 2.0) - 4.0;
  return k <= 0.0 ? 0 : static_cast<uint64_t>(k);
}

}  // namespace

double race_gumbel(uint64_t bits) noexcept {
  const double u = static_cast<double>(((bits >> 12) << 1) | 1) * 0x1.0p-53;
  return -std::log(-std::log(u));
}

int32_t race_draw(std::span<const float> logits, float l_max, float temperature, uint64_t seed,
                  uint64_t rng_counter, std::span<const float> kept) noexcept {
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
  int64_t best = std::find(logits.begin(), logits.end(), l_max) - logits.begin();
  double best_score = score(best, race_noise_bits(row_bits, best));
  for (int64_t begin = 0; begin < vocab; begin += kBlock) {
    const int64_t end = std::min(begin + kBlock, vocab);
    float block_max = -std::numeric_limits<float>::infinity();
    for (int64_t j = begin; j < end; ++j) block_max = std::max(block_max, logits[j]);
    if (block_max == -std::numeric_limits<float>::infinity()) {
      continue;
    }
    // A member scores at most y_max + G. The margin (far above the scores' rounding, ~1e-14)
    // keeps every column whose computed score could reach the best.
    const double y_max = (static_cast<double>(block_max) - top) / t;
    const double need = best_score - y_max - 1e-9 * (1.0 + std::abs(y_max) + std::abs(best_score));
    if (need > max_gumbel()) {
      continue;
    }
    const uint64_t k_min = min_noise_index(need);
    for (int64_t j = begin; j < end; ++j) {
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
  return static_cast<int32_t>(best);
}

}  // namespace tessera::sampler
