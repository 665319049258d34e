#include "truncation.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace tessera::sampler {
namespace {

constexpr float kRemoved = -std::numeric_limits<float>::infinity();

// Marks every logit below the k-th largest as removed (ties with the k-th value stay).
void apply_top_k(std::span<float> logits, int32_t top_k, std::vector<float>& selection) {
  if (top_k <= 0 || static_cast<size_t>(top_k) >= logits.size()) return;
  selection.assign(logits.begin(), logits.end());
  auto kth = selection.begin() + (top_k - 1);
  std::nth_element(selection.begin(), kth, selection.end(), std::greater<>());
  const float threshold = *kth;
  for (float& l : logits) {
    if (l < threshold) l = kRemoved;
  }
}

// The weight b of the last token top-p keeps: walking the weights from the largest down, the
// first whose cumulative mass reaches `target`. Found without sorting by a mass-weighted
// quickselect (three-way partitions around a median-of-three pivot, expected O(n)); `w` holds the
// positive weights and is reordered. Returns 0 (keep everything) if rounding leaves the target
// unreached.
float top_p_boundary(std::vector<float>& w, double target) {
  auto first = w.begin();
  auto last = w.end();
  double mass_above = 0.0;  // mass of weights known to be larger than everything in [first, last)
  while (first != last) {
    const float a = *first, b = *(first + (last - first) / 2), c = *(last - 1);
    const float pivot = std::max(std::min(a, b), std::min(std::max(a, b), c));
    // [first, greater_end) > pivot, [greater_end, equal_end) == pivot, rest < pivot.
    const auto greater_end = std::partition(first, last, [&](float x) { return x > pivot; });
    const auto equal_end = std::partition(greater_end, last, [&](float x) { return x == pivot; });
    double greater_mass = 0.0;
    for (auto it = first; it != greater_end; ++it) greater_mass += *it;
    if (mass_above + greater_mass >= target) {
      last = greater_end;  // the boundary lies among the larger weights
      continue;
    }
    const double equal_mass =
        static_cast<double>(pivot) * static_cast<double>(equal_end - greater_end);
    if (mass_above + greater_mass + equal_mass >= target) return pivot;
    mass_above += greater_mass + equal_mass;
    first = equal_end;
  }
  return 0.0f;
}

}  // namespace

void logits_to_sampling_weights(std::span<float> values, const ts_sampling_params& params,
                                TruncationScratch& scratch) {
  apply_top_k(values, params.top_k, scratch.selection);

  // Temperature: softmax(l / T) is proportional to exp((l - l_max) / T); the shift keeps every
  // exponent <= 0, so nothing overflows for any T > 0 (a huge negative exponent just gives 0).
  const float l_max = *std::max_element(values.begin(), values.end());
  const float temperature = params.temperature;
  double total = 0.0;
  for (float& v : values) {
    v = v == kRemoved ? 0.0f : std::exp((v - l_max) / temperature);
    total += v;
  }

  if (params.top_p < 1.0f) {
    std::vector<float>& positive = scratch.selection;
    positive.clear();
    for (const float w : values) {
      if (w > 0.0f) positive.push_back(w);
    }
    const float boundary = top_p_boundary(positive, static_cast<double>(params.top_p) * total);
    for (float& w : values) {
      if (w < boundary) w = 0.0f;
    }
  }
  if (params.min_p > 0.0f) {
    // The largest weight is exp(0) = 1, so min_p * max_prob is min_p in weight units.
    for (float& w : values) {
      if (w < params.min_p) w = 0.0f;
    }
  }
}

int32_t draw_from_weights(std::span<const float> weights, double u) {
  double total = 0.0;
  for (const float w : weights) total += w;
  const double target = u * total;
  double cumulative = 0.0;
  int32_t last_positive = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0.0f) continue;
    cumulative += weights[i];
    last_positive = static_cast<int32_t>(i);
    if (cumulative > target) return last_positive;
  }
  return last_positive;
}

}  // namespace tessera::sampler
