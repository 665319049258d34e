#include "truncation.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace tessera::sampler {
namespace {

constexpr float kRemoved = -std::numeric_limits<float>::infinity();

// The k-th largest logit (counting repeats). For the usual small k a bounded min-heap touches
// each logit with one comparison, O(vocab log k); a large k uses nth_element, O(vocab).
float kth_largest(std::span<const float> logits, int32_t k, std::vector<float>& selection) {
  constexpr int32_t kHeapLimit = 1024;
  if (k > kHeapLimit) {
    selection.assign(logits.begin(), logits.end());
    auto kth = selection.begin() + (k - 1);
    std::nth_element(selection.begin(), kth, selection.end(), std::greater<>());
    return *kth;
  }
  selection.assign(logits.begin(), logits.begin() + k);
  std::make_heap(selection.begin(), selection.end(), std::greater<>());  // front: the smallest
  for (size_t i = static_cast<size_t>(k); i < logits.size(); ++i) {
    if (logits[i] <= selection.front()) {
      continue;
    }
    std::pop_heap(selection.begin(), selection.end(), std::greater<>());
    selection.back() = logits[i];
    std::push_heap(selection.begin(), selection.end(), std::greater<>());
  }
  return selection.front();
}

// The weight b of the last token top-p keeps: walking the weights from the largest down, the
// first whose cumulative mass reaches `target`. Found without sorting by a mass-weighted
// quickselect (three-way partitions around a median-of-three pivot, expected O(n)); `w` holds the
// candidate weights (every weight that can be the boundary) and is reordered. Returns 0 (keep
// everything) if rounding leaves the target unreached.
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
    for (auto it = first; it != greater_end; ++it) {
      greater_mass += *it;
    }
    if (mass_above + greater_mass >= target) {
      last = greater_end;  // the boundary lies among the larger weights
      continue;
    }
    const double equal_mass =
        static_cast<double>(pivot) * static_cast<double>(equal_end - greater_end);
    if (mass_above + greater_mass + equal_mass >= target) {
      return pivot;
    }
    mass_above += greater_mass + equal_mass;
    first = equal_end;
  }
  return 0.0f;
}

}  // namespace

void apply_top_k(std::span<float> logits, int32_t top_k, std::vector<float>& selection) {
  if (top_k <= 0 || static_cast<size_t>(top_k) >= logits.size()) {
    return;
  }
  const float threshold = kth_largest(logits, top_k, selection);
  for (float& l : logits) {
    if (l < threshold) {
      l = kRemoved;
    }
  }
}

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
    // The boundary b leaves a tail of mass > (1 - top_p) * total at or below it, and n tokens of
    // weight <= x weigh at most n * x, so every weight <= (1 - top_p) * total / vocab lies below b:
    // the selection can skip them (half that bound, for rounding). Peaked rows lose most tokens.
    const double top_p = params.top_p;
    const double negligible = 0.5 * (1.0 - top_p) * total / static_cast<double>(values.size());
    std::vector<float>& heavy = scratch.selection;
    heavy.clear();
    for (const float w : values) {
      if (w > 0.0f && w > negligible) {
        heavy.push_back(w);
      }
    }
    const float boundary = top_p_boundary(heavy, top_p * total);
    for (float& w : values) {
      if (w < boundary) {
        w = 0.0f;
      }
    }
  }
  if (params.min_p > 0.0f) {
    // The largest weight is exp(0) = 1, so min_p * max_prob is min_p in weight units.
    for (float& w : values) {
      if (w < params.min_p) {
        w = 0.0f;
      }
    }
  }
}

int32_t draw_from_weights(std::span<const float> weights, double u) {
  double total = 0.0;
  for (const float w : weights) {
    total += w;
  }
  const double target = u * total;
  double cumulative = 0.0;
  int32_t last_positive = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0.0f) {
      continue;
    }
    cumulative += weights[i];
    last_positive = static_cast<int32_t>(i);
    if (cumulative > target) {
      return last_positive;
    }
  }
  return last_positive;
}

}  // namespace tessera::sampler
