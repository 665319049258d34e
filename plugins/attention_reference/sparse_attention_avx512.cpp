// attend_with_sink on AVX-512 (reference_kernels.hpp): the fp32 definition of sparse_attention.cpp
// with intrinsics, the same operations in the same order, so the same bits as the plain loops.
// What makes it fast: the heads go in groups of up to 8, each kv row (one per token, shared by
// every head: MQA) loaded once per group; a group's 16 dot products (8 heads x 2 rows, 4 x 4, ...)
// are folded together by one transposing reduction (fold_16_dots) instead of 16 stores and 15
// dependent scalar adds each; the rest of the kernel is attend_heads.hpp's.
// A double-precision kernel takes ~6% of a 64-sequence step of the 50m preset on the Xeon
// (docs/perf.md "fp32 reference attention and indexer").
#include "sparse_attention_avx512.hpp"

#include <immintrin.h>

#include <cmath>

#include "fp32_dot.hpp"

#define TS_ATTN_TARGET __attribute__((target("avx512f")))
#include "attend_heads.hpp"

namespace tessera::reference {

namespace {

constexpr int32_t kLanes = 16;  // floats per vector
static_assert(kLanes == kSumLanes);

// Two vectors into one: the 128-bit quarters Q of a and b picked by `lo` and `hi` (shuffle_f32x4
// immediates) added.
template <int kLo, int kHi>
TS_ATTN_TARGET inline __m512 add_quarters(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, kLo), _mm512_shuffle_f32x4(a, b, kHi));
}
// The same within each quarter: lanes picked by shuffle_ps immediates.
template <int kLo, int kHi>
TS_ATTN_TARGET inline __m512 add_lanes(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_shuffle_ps(a, b, kLo), _mm512_shuffle_ps(a, b, kHi));
}

// Lane i of the result = fold16 of acc[i]'s lanes, for 16 vectors at once. Each stage adds lanes
// k and k + 8 (then k + 4, k + 2, k + 1) of every input, as fold16 does; the stages move lanes so
// that output lane 4i + k holds input 4k + i, so the inputs go in transposed (4 x 4) order.
TS_ATTN_TARGET inline __m512 fold_16_dots(const __m512* acc) {
  __m512 v[16];
  for (size_t m = 0; m < 16; ++m) {
    v[m] = acc[(m % 4) * 4 + m / 4];
  }
  __m512 s1[8], s2[4], s3[2];
  for (size_t p = 0; p < 8; ++p) {  // [a.q0 + a.q2, a.q1 + a.q3, b.q0 + b.q2, b.q1 + b.q3]
    s1[p] = add_quarters<_MM_SHUFFLE(1, 0, 1, 0), _MM_SHUFFLE(3, 2, 3, 2)>(v[2 * p], v[2 * p + 1]);
  }
  for (size_t p = 0; p < 4; ++p) {  // quarter t: input 4p + t's lanes k + (k + 4)
    s2[p] =
        add_quarters<_MM_SHUFFLE(2, 0, 2, 0), _MM_SHUFFLE(3, 1, 3, 1)>(s1[2 * p], s1[2 * p + 1]);
  }
  for (size_t p = 0; p < 2; ++p) {  // lanes k + (k + 2)
    s3[p] = add_lanes<_MM_SHUFFLE(1, 0, 1, 0), _MM_SHUFFLE(3, 2, 3, 2)>(s2[2 * p], s2[2 * p + 1]);
  }
  return add_lanes<_MM_SHUFFLE(2, 0, 2, 0), _MM_SHUFFLE(3, 1, 3, 1)>(s3[0], s3[1]);
}

// dots[h][j + r] = dot(q_h, rows[j + r]) for the G heads of q ([G, dim]), R rows at once.
template <int G, int R>
TS_ATTN_TARGET inline void group_dots(const float* q, const float* const* rows, int32_t dim,
                                      int64_t n_rows, int64_t j, float* dots) {
  __m512 acc[G * R];
  for (auto& a : acc) {
    a = _mm512_setzero_ps();
  }
  const int32_t full = dim - dim % kLanes;
  for (int32_t c = 0; c < full; c += kLanes) {
    __m512 w[R];
    for (int r = 0; r < R; ++r) {
      w[r] = _mm512_loadu_ps(rows[j + r] + c);
    }
    for (int h = 0; h < G; ++h) {
      const __m512 qv = _mm512_loadu_ps(q + static_cast<int64_t>(h) * dim + c);
      for (int r = 0; r < R; ++r) {
        acc[h * R + r] = _mm512_fmadd_ps(qv, w[r], acc[h * R + r]);
      }
    }
  }
  alignas(64) float folded[G * R];
  if constexpr (G * R == 16) {
    _mm512_store_ps(folded, fold_16_dots(acc));
  } else {
    for (int i = 0; i < G * R; ++i) {
      alignas(64) float lanes[kLanes];
      _mm512_store_ps(lanes, acc[i]);
      folded[i] = fold16(lanes);
    }
  }
  for (int h = 0; h < G; ++h) {
    const float* qh = q + static_cast<int64_t>(h) * dim;
    for (int r = 0; r < R; ++r) {
      float d = folded[h * R + r];
      for (int32_t c = full; c < dim; ++c) {
        d = std::fma(qh[c], rows[j + r][c], d);
      }
      dots[h * n_rows + j + r] = d;
    }
  }
}

// The vector ops of attend_heads.hpp, 16 lanes.
struct Avx512 {
  using Vec = __m512;
  static constexpr int32_t kWidth = kLanes;
  static constexpr int kMaxGroup = 8;
  TS_ATTN_TARGET static Vec zero() { return _mm512_setzero_ps(); }
  TS_ATTN_TARGET static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  TS_ATTN_TARGET static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  TS_ATTN_TARGET static Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  TS_ATTN_TARGET static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  TS_ATTN_TARGET static Vec set1(float x) { return _mm512_set1_ps(x); }
  template <int G>
  TS_ATTN_TARGET static void dots(const float* q, const float* const* rows, int32_t dim,
                                  int64_t n_rows, float* e) {
    constexpr int R = 16 / G;  // rows per dot group: 16 accumulators, one fold
    int64_t j = 0;
    for (; j + R <= n_rows; j += R) {
      group_dots<G, R>(q, rows, dim, n_rows, j, e);
    }
    for (; j < n_rows; ++j) {
      group_dots<G, 1>(q, rows, dim, n_rows, j, e);
    }
  }
};

}  // namespace

bool attend_avx512_available() {
  static const bool ok = __builtin_cpu_supports("avx512f");
  return ok;
}

TS_ATTN_TARGET void attend_with_sink_avx512(const float* q, int32_t n_heads, int32_t dim,
                                            const float* const* rows, int64_t n_rows, float scale,
                                            const float* sink, float* out) {
  attend_heads<Avx512>(q, n_heads, dim, rows, n_rows, scale, sink, out);
}

}  // namespace tessera::reference
