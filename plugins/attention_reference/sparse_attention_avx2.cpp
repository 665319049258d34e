// attend_with_sink on AVX2 + FMA (reference_kernels.hpp): the fp32 definition of
// sparse_attention.cpp with 8-lane intrinsics, the same operations in the same order, so the same
// bits as the plain loops and the AVX-512 kernel. A dot product's 16 partial sums are two vectors
// (lanes 0-7 and 8-15), so fold16's first step is one add of the two. Heads go in groups of up to
// 4 (attend_heads.hpp: the rest of the kernel). GCC 12 makes the definition's plain loops mostly
// scalar code even in their AVX2 clone: 10.8% of a 64-sequence step of the 50m preset on a Zen 3
// (docs/perf.md "AVX2 kernels where GCC's clones stay scalar").
#include "sparse_attention_avx2.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cmath>

#include "fp32_dot.hpp"

#define TS_ATTN_TARGET __attribute__((target("avx2,fma")))
#include "attend_heads.hpp"

namespace tessera::reference {

namespace {

constexpr int32_t kHalf = 8;  // floats per vector
static_assert(2 * kHalf == kSumLanes);

// fold16 of the 16 partial sums lo (lanes 0-7) and hi (8-15): lanes k + (k + 8), then k + (k + 4),
// then (0 + 2) + (1 + 3).
TS_ATTN_TARGET inline float fold(__m256 lo, __m256 hi) {
  const __m256 h8 = _mm256_add_ps(lo, hi);
  const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
  const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));  // [h4[0] + h4[2], h4[1] + h4[3], ..]
  return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

// dots[h * n_rows + j] = dot16(q_h, rows[j]) for the G heads of q ([G, dim]).
template <int G>
TS_ATTN_TARGET inline void group_dots(const float* q, const float* row, int32_t dim, int64_t n_rows,
                                      int64_t j, float* dots) {
  __m256 lo[G], hi[G];
  for (int h = 0; h < G; ++h) {
    lo[h] = hi[h] = _mm256_setzero_ps();
  }
  const int32_t full = dim - dim % kSumLanes;
  for (int32_t c = 0; c < full; c += kSumLanes) {
    const __m256 w0 = _mm256_loadu_ps(row + c);
    const __m256 w1 = _mm256_loadu_ps(row + c + kHalf);
    for (int h = 0; h < G; ++h) {
      const float* qh = q + static_cast<int64_t>(h) * dim + c;
      lo[h] = _mm256_fmadd_ps(_mm256_loadu_ps(qh), w0, lo[h]);
      hi[h] = _mm256_fmadd_ps(_mm256_loadu_ps(qh + kHalf), w1, hi[h]);
    }
  }
  for (int h = 0; h < G; ++h) {
    const float* qh = q + static_cast<int64_t>(h) * dim;
    float d = fold(lo[h], hi[h]);
    for (int32_t c = full; c < dim; ++c) {
      d = std::fma(qh[c], row[c], d);
    }
    dots[h * n_rows + j] = d;
  }
}

// The vector ops of attend_heads.hpp, 8 lanes.
struct Avx2 {
  using Vec = __m256;
  static constexpr int32_t kWidth = kHalf;
  static constexpr int kMaxGroup = 4;
  TS_ATTN_TARGET static Vec zero() { return _mm256_setzero_ps(); }
  TS_ATTN_TARGET static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  TS_ATTN_TARGET static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  TS_ATTN_TARGET static Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  TS_ATTN_TARGET static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  TS_ATTN_TARGET static Vec set1(float x) { return _mm256_set1_ps(x); }
  template <int G>
  TS_ATTN_TARGET static void dots(const float* q, const float* const* rows, int32_t dim,
                                  int64_t n_rows, float* e) {
    for (int64_t j = 0; j < n_rows; ++j) {
      group_dots<G>(q, rows[j], dim, n_rows, j, e);
    }
  }
};

}  // namespace

bool attend_avx2_available() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}

TS_ATTN_TARGET void attend_with_sink_avx2(const float* q, int32_t n_heads, int32_t dim,
                                          const float* const* rows, int64_t n_rows, float scale,
                                          const float* sink, float* out) {
  attend_heads<Avx2>(q, n_heads, dim, rows, n_rows, scale, sink, out);
}

}  // namespace tessera::reference

#else  // not x86-64 GCC / clang: never available, never called

namespace tessera::reference {
bool attend_avx2_available() { return false; }
void attend_with_sink_avx2(const float*, int32_t, int32_t, const float* const*, int64_t, float,
                           const float*, float*) {}
}  // namespace tessera::reference

#endif
