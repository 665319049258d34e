// Summary of a sample of per-position (or per-run) numbers: count, mean, p50/p90/p99, max.
// Percentiles interpolate linearly between order statistics (Hyndman & Fan 1996, definition 7 —
// numpy's default), so p50 of {1, 2} is 1.5 and p100 is the max.
#pragma once

#include <cstdint>
#include <span>

namespace tessera::ab {

struct Distribution {
  int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0, min = 0;
};

// q in [0, 1]; the sample need not be sorted. An empty sample gives 0.
double percentile(std::span<const double> sample, double q);
Distribution summarize(std::span<const double> sample);

}  // namespace tessera::ab
