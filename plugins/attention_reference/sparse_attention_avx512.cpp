// attend_with_sink on AVX-512 (reference_kernels.hpp), written out with intrinsics so that it
// computes exactly what its definition below says, and fast: the compiler's clone of the plain
// loops took ~11 us for 8 heads x 56 rows x 128 (each dot product one serial chain of 4-wide adds,
// the weighted sum going through memory once per row), this one ~6. Since session 13 it takes the
// heads in groups of up to 8 and widens each (shared, MQA) kv row to double once per group, not
// once per head: the same operations per head, so the same bits; a 64-sequence step of the 50m
// preset 24.3-24.9 -> 23.1-23.5 ms (2 interleaved pairs).
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
#include <type_traits>
#include <vector>

#include "sink_softmax.hpp"

namespace tessera::reference {

namespace {

#define TS_ATTN_AVX512 __attribute__((target("avx512f")))

constexpr int32_t kLanes = 8;  // doubles per vector

TS_ATTN_AVX512 inline __m512d widen(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }

// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))
TS_ATTN_AVX512 inline double fold(__m512d v) {
  alignas(64) double l[kLanes];
  _mm512_store_pd(l, v);
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// Heads per group below: the rows (one kv per token, shared by every head) are widened to double
// once per group instead of once per head, which was half of the vector work.
constexpr int kMaxGroup = 8;

// logit[h][j] = dot(q_h, rows[j]) for the G heads of q ([G, dim] doubles), R rows at once: the
// definition's dot for every (h, j), G x R accumulators.
template <int G, int R>
TS_ATTN_AVX512 inline void group_dots(const double* q, const float* const* rows, int32_t dim,
                                      int64_t n_rows, int64_t j, double* logit) {
  __m512d acc[G][R];
  for (auto& head : acc) {
    for (auto& a : head) {
      a = _mm512_setzero_pd();
    }
  }
  int32_t c = 0;
  for (; c + kLanes <= dim; c += kLanes) {
    __m512d w[R];
    for (int r = 0; r < R; ++r) {
      w[r] = widen(rows[j + r] + c);
    }
    for (int h = 0; h < G; ++h) {
      const __m512d qv = _mm512_loadu_pd(q + static_cast<int64_t>(h) * dim + c);
      for (int r = 0; r < R; ++r) {
        acc[h][r] = _mm512_add_pd(acc[h][r], _mm512_mul_pd(qv, w[r]));
      }
    }
  }
  for (int h = 0; h < G; ++h) {
    const double* qh = q + static_cast<int64_t>(h) * dim;
    for (int r = 0; r < R; ++r) {
      double dot = fold(acc[h][r]);
      for (int32_t t = c; t < dim; ++t) {
        const double product = qh[t] * static_cast<double>(rows[j + r][t]);
        dot = dot + product;
      }
      logit[h * n_rows + j + r] = dot;
    }
  }
}

// acc[h][c] for the G heads and columns [c0, c0 + 16): 2 x G vectors in registers over all rows,
// each the definition's fma chain over j.
template <int G>
TS_ATTN_AVX512 inline void group_weighted(const double* e, const float* const* rows, int64_t n_rows,
                                          int32_t dim, int32_t c0, double* acc) {
  __m512d sum[G][2];
  for (auto& head : sum) {
    head[0] = head[1] = _mm512_setzero_pd();
  }
  for (int64_t j = 0; j < n_rows; ++j) {
    const __m512d w0 = widen(rows[j] + c0), w1 = widen(rows[j] + c0 + kLanes);
    for (int h = 0; h < G; ++h) {
      const __m512d eh = _mm512_set1_pd(e[h * n_rows + j]);
      sum[h][0] = _mm512_fmadd_pd(eh, w0, sum[h][0]);
      sum[h][1] = _mm512_fmadd_pd(eh, w1, sum[h][1]);
    }
  }
  for (int h = 0; h < G; ++h) {
    _mm512_storeu_pd(acc + static_cast<int64_t>(h) * dim + c0, sum[h][0]);
    _mm512_storeu_pd(acc + static_cast<int64_t>(h) * dim + c0 + kLanes, sum[h][1]);
  }
}

// G heads, starting at q's head 0 (q, sink, out already offset): the definition, all of it.
template <int G>
TS_ATTN_AVX512 void attend_group(const float* q, int32_t dim, const float* const* rows,
                                 int64_t n_rows, float scale, const float* sink, float* out) {
  thread_local std::vector<double> logit, qd, acc;
  logit.resize(static_cast<size_t>(G) * n_rows);
  qd.resize(static_cast<size_t>(G) * dim);
  acc.resize(static_cast<size_t>(G) * dim);
  for (int64_t i = 0; i < static_cast<int64_t>(G) * dim; ++i) {
    qd[i] = q[i];
  }
  constexpr int kPair = 2;  // rows per dot group: G x 2 accumulators
  int64_t j = 0;
  for (; j + kPair <= n_rows; j += kPair) {
    group_dots<G, kPair>(qd.data(), rows, dim, n_rows, j, logit.data());
  }
  for (; j < n_rows; ++j) {
    group_dots<G, 1>(qd.data(), rows, dim, n_rows, j, logit.data());
  }
  double denom[G];
  for (int h = 0; h < G; ++h) {
    double* lh = logit.data() + h * n_rows;
    for (j = 0; j < n_rows; ++j) {
      lh[j] = lh[j] * static_cast<double>(scale);
    }
    denom[h] = sink_softmax(lh, n_rows, sink[h]);
  }
  constexpr int32_t kColumns = 2 * kLanes;
  int32_t c0 = 0;
  for (; c0 + kColumns <= dim; c0 += kColumns) {
    group_weighted<G>(logit.data(), rows, n_rows, dim, c0, acc.data());
  }
  for (int h = 0; h < G; ++h) {
    const double* eh = logit.data() + h * n_rows;
    for (int32_t c = c0; c < dim; ++c) {  // a dim that is not a multiple of 16
      double sum = 0.0;
      for (j = 0; j < n_rows; ++j) {
        sum = std::fma(eh[j], static_cast<double>(rows[j][c]), sum);
      }
      acc[static_cast<size_t>(h) * dim + c] = sum;
    }
    float* oh = out + static_cast<int64_t>(h) * dim;
    for (int32_t c = 0; c < dim; ++c) {
      oh[c] = static_cast<float>(acc[static_cast<size_t>(h) * dim + c] / denom[h]);
    }
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
  // Heads in groups of 8, then 4, 2, 1: the same operations for every head whatever its group.
  int32_t h = 0;
  auto run = [&](auto group) {
    constexpr int G = decltype(group)::value;
    for (; h + G <= n_heads; h += G) {
      attend_group<G>(q + static_cast<int64_t>(h) * dim, dim, rows, n_rows, scale, sink + h,
                      out + static_cast<int64_t>(h) * dim);
    }
  };
  run(std::integral_constant<int, kMaxGroup>{});
  run(std::integral_constant<int, 4>{});
  run(std::integral_constant<int, 2>{});
  run(std::integral_constant<int, 1>{});
}

}  // namespace tessera::reference
