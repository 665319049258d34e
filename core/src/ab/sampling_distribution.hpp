// The distribution an arm samples a position's token from, for the coupling numbers of an A/B
// (docs/ab.md "Coupling"): softmax(logits / T) cut by top-k, top-p and min-p and renormalised,
// with the standard sampler's rules (docs/sampler.md: ties at a cut are kept; HF's order
// temperature -> top-k -> top-p -> min-p, each measured on the survivors of the previous one),
// in double. Penalties are left out: both arms read the same context, so they would shift both
// rows alike. Temperature 0 is the point mass on the argmax (lowest id).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::ab {

struct SamplingShape {
  double temperature = 1.0;
  int64_t top_k = 0;  // <= 0 or >= vocab: off
  double top_p = 1.0;
  double min_p = 0.0;
};

// out: [vocab] probabilities summing to 1.
void sampling_distribution(std::span<const float> logits, const SamplingShape& shape,
                           std::vector<double>& out);

// (1/2) sum_i |p_i - q_i|: the smallest probability with which any coupling of p and q draws
// different tokens.
[[nodiscard]] double total_variation(std::span<const double> p, std::span<const double> q);

}  // namespace tessera::ab
