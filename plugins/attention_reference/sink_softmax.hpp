// Internal to the reference attention: the softmax with a sink that both attend_with_sink bodies
// (the plain loops and the AVX-512 kernel) apply between their dot products and weighted sums.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tessera::reference {

// In place, logit[j] (already scaled) -> exp(logit[j] - m) with m = max(sink, max_j logit[j]);
// returns the denominator exp(sink - m) + sum_j of them, j ascending. The sink joins the
// denominator only (it has no value vector).
inline double sink_softmax(double* logit, int64_t n, float sink) {
  double max_logit = sink;
  for (int64_t j = 0; j < n; ++j) {
    max_logit = std::max(max_logit, logit[j]);
  }
  double denom = std::exp(static_cast<double>(sink) - max_logit);
  for (int64_t j = 0; j < n; ++j) {
    logit[j] = std::exp(logit[j] - max_logit);
    denom += logit[j];
  }
  return denom;
}

}  // namespace tessera::reference
