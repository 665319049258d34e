// Internal to the reference attention: the fp32 dot product of its definition
// (sparse_attention.cpp), shared by the attention's plain loops and the lightning indexer; the
// AVX-512 kernel computes the same operations with intrinsics.
#pragma once

#include <cmath>
#include <cstdint>

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

// q . row: 16 partial sums, lane k an fma chain q[c] * row[c] + lane over c = k (mod 16),
// c < dim - dim % 16, ascending from 0; folded (fold16); then an fma chain over the rest.
[[gnu::always_inline]] inline float dot16(const float* q, const float* row, int32_t dim) {
  float lanes[kSumLanes] = {};
  const int32_t full = dim - dim % kSumLanes;
  for (int32_t c = 0; c < full; c += kSumLanes) {
    for (int32_t k = 0; k < kSumLanes; ++k) {
      lanes[k] = std::fma(q[c + k], row[c + k], lanes[k]);
    }
  }
  float d = fold16(lanes);
  for (int32_t c = full; c < dim; ++c) {
    d = std::fma(q[c], row[c], d);
  }
  return d;
}

}  // namespace tessera::reference
