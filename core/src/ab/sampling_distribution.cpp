#include "ab/sampling_distribution.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "util/check.hpp"

namespace tessera::ab {

void sampling_distribution(std::span<const float> logits, const SamplingShape& shape,
                           std::vector<double>& out) {
  const size_t vocab = logits.size();
  TS_CHECK(vocab > 0, "A/B: an empty logit row");
  out.assign(vocab, 0.0);
  thread_local std::vector<size_t> order;
  order.resize(vocab);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  if (shape.temperature <= 0.0) {
    out[order[0]] = 1.0;  // stable: the lowest id among equal maxima
    return;
  }
  const double top = logits[order[0]];
  size_t kept = vocab;  // a prefix of `order`, ties at every cut included
  if (shape.top_k > 0 && static_cast<size_t>(shape.top_k) < vocab) {
    const float kth = logits[order[static_cast<size_t>(shape.top_k) - 1]];
    kept = static_cast<size_t>(shape.top_k);
    while (kept < vocab && logits[order[kept]] == kth) ++kept;
  }
  double total = 0.0;
  for (size_t i = 0; i < kept; ++i) {
    total += out[order[i]] =
        std::exp((static_cast<double>(logits[order[i]]) - top) / shape.temperature);
  }
  if (shape.top_p < 1.0) {
    double cumulative = 0.0;
    size_t i = 0;
    while (i < kept && (cumulative += out[order[i]]) < shape.top_p * total) ++i;
    i = std::min(i + 1, kept);
    while (i < kept && logits[order[i]] == logits[order[i - 1]]) ++i;
    kept = i;
  }
  if (shape.min_p > 0.0) {
    size_t i = 1;
    while (i < kept && out[order[i]] >= shape.min_p) ++i;  // the largest weight is 1
    kept = i;
  }
  total = 0.0;
  for (size_t i = 0; i < vocab; ++i) {
    if (i < kept) {
      total += out[order[i]];
    } else {
      out[order[i]] = 0.0;
    }
  }
  for (double& p : out) p /= total;
}

double total_variation(std::span<const double> p, std::span<const double> q) {
  TS_CHECK(p.size() == q.size(), "A/B: distributions of different sizes ({} vs {})", p.size(),
           q.size());
  double sum = 0.0;
  for (size_t i = 0; i < p.size(); ++i) sum += std::fabs(p[i] - q[i]);
  return std::min(1.0, sum / 2.0);
}

}  // namespace tessera::ab
