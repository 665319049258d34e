// Internal to the reference attention: the steps of its definition (sparse_attention.cpp) that
// both attend_with_sink bodies (the plain loops and the AVX-512 kernel) share as written here.
#pragma once

#include <algorithm>
#include <cstdint>

#include "fp32_dot.hpp"
#include "tessera/fma_exp.hpp"

namespace tessera::reference {

// In place, dots[j] -> e_j = exp(dots[j] * scale - m) with m = max(sink, max_j dots[j] * scale)
// (fma_exp_nonpositive); returns the denominator: 16 partial sums, lane k adding e_j for j = k
// (mod 16) ascending, folded (fold16), plus exp(sink - m). The sink joins the denominator only
// (it has no value vector).
[[gnu::always_inline]] inline float sink_softmax(float* dots, int64_t n, float scale, float sink) {
  for (int64_t j = 0; j < n; ++j) {
    dots[j] *= scale;
  }
  // The max in 16 lanes, so that the loop vectorises (a max is exact: any order gives it); written
  // as x86's maxps computes it (x > l ? x : l), which the compiler then uses.
  const auto larger = [](float l, float x) { return x > l ? x : l; };
  float lane_max[kSumLanes];
  std::fill_n(lane_max, kSumLanes, sink);
  int64_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    for (int k = 0; k < kSumLanes; ++k) {
      lane_max[k] = larger(lane_max[k], dots[i + k]);
    }
  }
  for (int k = 0; i + k < n; ++k) {
    lane_max[k] = larger(lane_max[k], dots[i + k]);
  }
  const float m = *std::max_element(lane_max, lane_max + kSumLanes);
  for (int64_t j = 0; j < n; ++j) {
    dots[j] = sdk::fma_exp_nonpositive(dots[j] - m);
  }
  float lanes[kSumLanes] = {};
  int64_t j = 0;
  for (; j + kSumLanes <= n; j += kSumLanes) {
    for (int k = 0; k < kSumLanes; ++k) {
      lanes[k] += dots[j + k];
    }
  }
  for (int k = 0; j + k < n; ++k) {
    lanes[k] += dots[j + k];
  }
  return fold16(lanes) + sdk::fma_exp_nonpositive(sink - m);
}

}  // namespace tessera::reference
