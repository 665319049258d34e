// attend_with_sink on AVX2 + FMA (reference_kernels.hpp): the fp32 definition of
// sparse_attention.cpp with 8-lane intrinsics, the same operations in the same order, so the same
// bits as the plain loops and the AVX-512 kernel. A dot product's 16 partial sums are two vectors
// (lanes 0-7 and 8-15), so fold16's first step is one add of the two. Heads go in groups of up to
// 4, each kv row (shared by every head: MQA) loaded once per group; the weighted sum keeps 2 x G
// vectors in registers over all rows. The plain loops GCC made of the definition were 10.8% of a
// 64-sequence step of the 50m preset on a Zen 3 (docs/perf.md, session 23).
#include "sparse_attention_avx2.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include "sink_softmax.hpp"

namespace tessera::reference {

namespace {

#define TS_ATTN_AVX2 __attribute__((target("avx2,fma")))

constexpr int32_t kHalf = 8;  // floats per vector
static_assert(2 * kHalf == kSumLanes);
constexpr int kMaxGroup = 4;

// fold16 of the 16 partial sums lo (lanes 0-7) and hi (8-15): lanes k + (k + 8), then k + (k + 4),
// then (0 + 2) + (1 + 3).
TS_ATTN_AVX2 inline float fold(__m256 lo, __m256 hi) {
  const __m256 h8 = _mm256_add_ps(lo, hi);
  const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
  const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));  // [h4[0] + h4[2], h4[1] + h4[3], ..]
  return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

// dots[h * n_rows + j] = dot16(q_h, rows[j]) for the G heads of q ([G, dim]).
template <int G>
TS_ATTN_AVX2 inline void group_dots(const float* q, const float* row, int32_t dim, int64_t n_rows,
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

// out[h][c] for the G heads and columns [c0, c0 + 16): each the definition's fma chain over j,
// times the head's 1 / denom as it is stored.
template <int G>
TS_ATTN_AVX2 inline void group_weighted(const float* e, const float* const* rows, int64_t n_rows,
                                        int32_t dim, int32_t c0, const float* inverse, float* out) {
  __m256 sum[G][2];
  for (auto& head : sum) {
    head[0] = head[1] = _mm256_setzero_ps();
  }
  for (int64_t j = 0; j < n_rows; ++j) {
    const __m256 w0 = _mm256_loadu_ps(rows[j] + c0);
    const __m256 w1 = _mm256_loadu_ps(rows[j] + c0 + kHalf);
    for (int h = 0; h < G; ++h) {
      const __m256 eh = _mm256_set1_ps(e[h * n_rows + j]);
      sum[h][0] = _mm256_fmadd_ps(eh, w0, sum[h][0]);
      sum[h][1] = _mm256_fmadd_ps(eh, w1, sum[h][1]);
    }
  }
  for (int h = 0; h < G; ++h) {
    const __m256 scale = _mm256_set1_ps(inverse[h]);
    float* oh = out + static_cast<int64_t>(h) * dim + c0;
    _mm256_storeu_ps(oh, _mm256_mul_ps(sum[h][0], scale));
    _mm256_storeu_ps(oh + kHalf, _mm256_mul_ps(sum[h][1], scale));
  }
}

// G heads, starting at q's head 0 (q, sink, out already offset): the definition, all of it.
template <int G>
TS_ATTN_AVX2 void attend_group(const float* q, int32_t dim, const float* const* rows,
                               int64_t n_rows, float scale, const float* sink, float* out) {
  thread_local std::vector<float> e;
  e.resize(static_cast<size_t>(G) * n_rows);
  for (int64_t j = 0; j < n_rows; ++j) {
    group_dots<G>(q, rows[j], dim, n_rows, j, e.data());
  }
  float inverse[G];
  for (int h = 0; h < G; ++h) {
    inverse[h] = 1.0f / sink_softmax(e.data() + h * n_rows, n_rows, scale, sink[h]);
  }
  int32_t c0 = 0;
  for (; c0 + kSumLanes <= dim; c0 += kSumLanes) {
    group_weighted<G>(e.data(), rows, n_rows, dim, c0, inverse, out);
  }
  for (int h = 0; h < G; ++h) {  // a dim that is not a multiple of 16
    const float* eh = e.data() + h * n_rows;
    float* oh = out + static_cast<int64_t>(h) * dim;
    for (int32_t c = c0; c < dim; ++c) {
      float sum = 0.0f;
      for (int64_t j = 0; j < n_rows; ++j) {
        sum = std::fma(eh[j], rows[j][c], sum);
      }
      oh[c] = sum * inverse[h];
    }
  }
}

}  // namespace

bool attend_avx2_available() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}

TS_ATTN_AVX2 void attend_with_sink_avx2(const float* q, int32_t n_heads, int32_t dim,
                                        const float* const* rows, int64_t n_rows, float scale,
                                        const float* sink, float* out) {
  // Heads in groups of 4, then 2, 1: the same operations for every head whatever its group.
  int32_t h = 0;
  auto run = [&](auto group) {
    constexpr int G = decltype(group)::value;
    for (; h + G <= n_heads; h += G) {
      attend_group<G>(q + static_cast<int64_t>(h) * dim, dim, rows, n_rows, scale, sink + h,
                      out + static_cast<int64_t>(h) * dim);
    }
  };
  run(std::integral_constant<int, kMaxGroup>{});
  run(std::integral_constant<int, 2>{});
  run(std::integral_constant<int, 1>{});
}

}  // namespace tessera::reference

#else  // not x86-64 GCC / clang: never available, never called

namespace tessera::reference {
bool attend_avx2_available() { return false; }
void attend_with_sink_avx2(const float*, int32_t, int32_t, const float* const*, int64_t, float,
                           const float*, float*) {}
}  // namespace tessera::reference

#endif
