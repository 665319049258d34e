// attend_with_sink on AVX-512 (reference_kernels.hpp), written out with intrinsics so that it
// computes exactly what its definition below says, and fast: the compiler's clone of the plain
// loops took ~11 us for 8 heads x 56 rows x 128 (each dot product one serial chain of 4-wide adds,
// the weighted sum going through memory once per row), this one ~6.
//
// Definition (per head h, in double):
//   s_j   = dot(q_h, row_j) * scale, where dot keeps 8 partial sums, lane k summing q[c] * row[c]
//           (a product, then a sum: no FMA) over c = k (mod 8), c < dim - dim % 8, ascending;
//           folds them ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)); then adds q[c] * row[c] for the
//           remaining c, ascending (again a product, then a sum);
//   m     = max(sink_h, max_j s_j);  e_j = exp(s_j - m);  denom = exp(sink_h - m) + sum_j e_j
//           (std::exp, the sum over j ascending);
//   o_h,c = float(acc_c / denom), acc_c = fma(e_j, row_j[c], acc_c) over j ascending from 0.0.
// These are the operations of the plain loops' AVX-512F clone as GCC 12 compiles them (it
// contracts the weighted sum, not the dot product): on 96 shapes (dims 1-512, 0-133 rows) the two
// gave the same float outputs, so an AVX-512 CPU's tokens do not change with this file.
// tests/unit/reference_attention_kernel_test.cpp checks the outputs against the definition.
#include "sparse_attention_avx512.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sink_softmax.hpp"

namespace tessera::reference {

namespace {

#define TS_ATTN_AVX512 __attribute__((target("avx512f")))

constexpr int32_t kLanes = 8;         // doubles per vector
constexpr int kRowsTogether = 4;      // dot products computed together: independent chains
constexpr int32_t kBlockVectors = 8;  // weighted-sum columns held in registers: 8 x 8 doubles

TS_ATTN_AVX512 inline __m512d widen(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }

// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))
TS_ATTN_AVX512 inline double fold(__m512d v) {
  alignas(64) double l[kLanes];
  _mm512_store_pd(l, v);
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// out[r] = dot(q, rows[r]) for R rows at once (the definition's dot).
template <int R>
TS_ATTN_AVX512 inline void dots(const double* q, const float* const* rows, int32_t dim,
                                double* out) {
  __m512d acc[R];
  for (auto& a : acc) {
    a = _mm512_setzero_pd();
  }
  int32_t c = 0;
  for (; c + kLanes <= dim; c += kLanes) {
    const __m512d qv = _mm512_loadu_pd(q + c);
    for (int r = 0; r < R; ++r) {
      acc[r] = _mm512_add_pd(acc[r], _mm512_mul_pd(qv, widen(rows[r] + c)));
    }
  }
  for (int r = 0; r < R; ++r) {
    double dot = fold(acc[r]);
    for (int32_t t = c; t < dim; ++t) {
      const double product = q[t] * static_cast<double>(rows[r][t]);
      dot = dot + product;
    }
    out[r] = dot;
  }
}

// acc[c] for columns [c0, c0 + 64): 8 vectors in registers over all rows.
TS_ATTN_AVX512 inline void weighted_block(const double* e, const float* const* rows, int64_t n_rows,
                                          int32_t c0, double* acc) {
  __m512d sum[kBlockVectors];
  for (auto& s : sum) {
    s = _mm512_setzero_pd();
  }
  for (int64_t j = 0; j < n_rows; ++j) {
    const __m512d w = _mm512_set1_pd(e[j]);
    const float* row = rows[j] + c0;
    for (int64_t i = 0; i < kBlockVectors; ++i) {
      sum[i] = _mm512_fmadd_pd(w, widen(row + i * kLanes), sum[i]);
    }
  }
  for (int64_t i = 0; i < kBlockVectors; ++i) {
    _mm512_storeu_pd(acc + c0 + i * kLanes, sum[i]);
  }
}

}  // namespace

bool attend_avx512_available() {
  static const bool ok = __builtin_cpu_supports("avx512f");
  return ok;
}

TS_ATTN_AVX512 void attend_with_sink_avx512(const float* q, int32_t n_heads, int32_t dim,
                                            const float* const* rows, int64_t n_rows, float scale,
                                            const float* sink, float* out) {
  thread_local std::vector<double> logit, qd, acc;
  logit.resize(static_cast<size_t>(n_rows));
  qd.resize(static_cast<size_t>(dim));
  acc.resize(static_cast<size_t>(dim));
  constexpr int32_t kBlock = kBlockVectors * kLanes;
  for (int32_t h = 0; h < n_heads; ++h) {
    const float* qh = q + static_cast<int64_t>(h) * dim;
    for (int32_t c = 0; c < dim; ++c) {
      qd[c] = qh[c];
    }
    int64_t j = 0;
    for (; j + kRowsTogether <= n_rows; j += kRowsTogether) {
      dots<kRowsTogether>(qd.data(), rows + j, dim, logit.data() + j);
    }
    for (; j < n_rows; ++j) {
      dots<1>(qd.data(), rows + j, dim, logit.data() + j);
    }
    for (j = 0; j < n_rows; ++j) {
      logit[j] = logit[j] * static_cast<double>(scale);
    }
    const double denom = sink_softmax(logit.data(), n_rows, sink[h]);
    int32_t c0 = 0;
    for (; c0 + kBlock <= dim; c0 += kBlock) {
      weighted_block(logit.data(), rows, n_rows, c0, acc.data());
    }
    for (int32_t c = c0; c < dim; ++c) {  // a dim that is not a multiple of 64 (tests)
      double sum = 0.0;
      for (j = 0; j < n_rows; ++j) {
        sum = std::fma(logit[j], static_cast<double>(rows[j][c]), sum);
      }
      acc[c] = sum;
    }
    float* oh = out + static_cast<int64_t>(h) * dim;
    for (int32_t c = 0; c < dim; ++c) {
      oh[c] = static_cast<float>(acc[c] / denom);
    }
  }
}

}  // namespace tessera::reference
