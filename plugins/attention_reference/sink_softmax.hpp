// Internal to the reference attention: the steps of its definition (sparse_attention.cpp) that
// both attend_with_sink bodies (the plain loops and the AVX-512 kernel) share as written here.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tessera/fma_exp.hpp"

namespace tessera::reference {

inline constexpr int32_t kSumLanes = 16;  // partial sums of a dot product or a denominator

// The sum of 16 partial sums as the fixed tree of an AVX-512 register's reduction: lanes k and
// k + 8, then k and k + 4, k and k + 2, and the last two.
[[gnu::always_inline]] inline float fold16(const float* l) {
  float h8[8], h4[4];
  for (int k = 0; k < 8; ++k) {
    h8[k] = l[k] + l[k + 8];
  }
  for (int k = 0; k < 4; ++k) {
    h4[k] = h8[k] + h8[k + 4];
  }
  return (h4[0] + h4[2]) + (h4[1] + h4[3]);
}

// In place, dots[j] -> e_j = exp(dots[j] * scale - m) with m = max(sink, max_j dots[j] * scale)
// (fma_exp_nonpositive); returns the denominator: 16 partial sums, lane k adding e_j for j = k
// (mod 16) ascending, folded (fold16), plus exp(sink - m). The sink joins the denominator only
// (it has no value vector).
[[gnu::always_inline]] inline float sink_softmax(float* dots, int64_t n, float scale, float sink) {
  float m = sink;
  for (int64_t j = 0; j < n; ++j) {
    dots[j] *= scale;
    m = std::max(m, dots[j]);
  }
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
