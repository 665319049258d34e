#include "certified_draw.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::sampler {

int32_t certified_draw(std::span<const float> weights, const BlockWeights& sums, double u,
                       const WeightBound& bound) {
  const double total = sums.total;
  const double target = u * total;
  const auto vocab = static_cast<double>(weights.size());
  // A prefix sum and the target each move by at most d T + V a between fast and libm weights, plus
  // the rounding of the double sums (each < V 2^-53 T; four of them are involved).
  const double margin =
      2.0 * (bound.rel * total + vocab * bound.abs) + 4.0 * vocab * 0x1.0p-53 * total;
  double cumulative = 0.0;
  size_t block = 0;
  const size_t blocks = sums.block_sums.size();
  for (; block < blocks; ++block) {
    const double next = cumulative + sums.block_sums[block];
    if (next > target) break;
    cumulative = next;
  }
  if (block == blocks) return -1;  // rounding ran past the end
  const size_t first = block * static_cast<size_t>(kWeightBlock);
  const size_t last = std::min(weights.size(), first + static_cast<size_t>(kWeightBlock));
  for (size_t i = first; i < last; ++i) {
    if (weights[i] <= 0.0f) continue;
    const double before = cumulative;
    cumulative += weights[i];
    if (cumulative > target) {
      const bool certain = cumulative - target > margin && target - before > margin;
      return certain ? static_cast<int32_t>(i) : -1;
    }
  }
  return -1;  // the block's sum and its elements' running sum rounded differently
}

void certified_min_p(std::span<const float> logits, float l_max, float temperature, float min_p,
                     std::span<float> weights, BlockWeights& sums, const WeightBound& bound) {
  const double threshold = min_p;
  for (size_t i = 0; i < weights.size(); ++i) {
    const double w = weights[i];
    const double tolerance = bound.rel * std::max(w, threshold) + bound.abs;
    if (w >= threshold + tolerance) continue;  // libm's weight is >= min_p too: kept
    if (w + tolerance < threshold) {           // libm's weight is < min_p too: dropped
      weights[i] = 0.0f;
      continue;
    }
    const float exact = std::exp((logits[i] - l_max) / temperature);
    weights[i] = exact < min_p ? 0.0f : exact;
  }
  sum_weight_blocks(weights, sums);
}

}  // namespace tessera::sampler
