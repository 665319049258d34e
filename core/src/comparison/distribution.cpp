#include "comparison/distribution.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "util/check.hpp"

namespace tessera::ab {

namespace {

double sorted_percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  // Written so that equal neighbours give exactly their value (no a + 0 * (b - a) rounding).
  return frac == 0 ? sorted[lo] : sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

}  // namespace

double percentile(std::span<const double> sample, double q) {
  TS_CHECK(q >= 0 && q <= 1, "percentile: q = {} outside [0, 1]", q);
  std::vector<double> sorted(sample.begin(), sample.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted_percentile(sorted, q);
}

Distribution summarize(std::span<const double> sample) {
  Distribution d;
  d.count = static_cast<int64_t>(sample.size());
  if (sample.empty()) return d;
  std::vector<double> sorted(sample.begin(), sample.end());
  std::sort(sorted.begin(), sorted.end());
  d.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(d.count);
  d.p50 = sorted_percentile(sorted, 0.50);
  d.p90 = sorted_percentile(sorted, 0.90);
  d.p99 = sorted_percentile(sorted, 0.99);
  d.min = sorted.front();
  d.max = sorted.back();
  return d;
}

}  // namespace tessera::ab
