#include "ops/softmax_pool.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/gemm_nt.hpp"  // gemm_nt_avx512_available

// glibc's libmvec: exp on 8 double lanes (the x86-64 vector function ABI name of exp for AVX-512).
// NOLINTNEXTLINE(bugprone-reserved-identifier): glibc exports it under this name
extern "C" __attribute__((target("avx512f"))) __m512d _ZGVeN8v_exp(__m512d x);
// The same on 4 double lanes for AVX2 (_ZGVdN4v_exp, within 4 ulp of exp).
// NOLINTNEXTLINE(bugprone-reserved-identifier): glibc exports it under this name
extern "C" __attribute__((target("avx2,fma"))) __m256d _ZGVdN4v_exp(__m256d x);

namespace tessera::dsv4 {
namespace {

// 8 floats from p (lanes outside mask read as 0, never touched in memory).
__attribute__((target("avx512f"))) inline __m256 load8(__mmask8 mask, const float* p) {
  return _mm512_castps512_ps256(_mm512_maskz_loadu_ps(mask, p));
}

// Channels [j, j + 8) (lanes past dim masked off).
__attribute__((target("avx512f"))) void pool8(std::span<const PoolRows> parts, int64_t j,
                                              __mmask8 mask, float* entry) {
  __m256 max = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (const PoolRows& p : parts) {
    for (int64_t t = 0; t < p.rows; ++t) {
      max = _mm256_max_ps(max, load8(mask, p.gate + t * p.stride + j));
    }
  }
  const __m512d max_d = _mm512_cvtps_pd(max);
  __m512d denom = _mm512_setzero_pd(), acc = _mm512_setzero_pd();
  for (const PoolRows& p : parts) {
    for (int64_t t = 0; t < p.rows; ++t) {
      const __m512d g = _mm512_cvtps_pd(load8(mask, p.gate + t * p.stride + j));
      const __m512d kv = _mm512_cvtps_pd(load8(mask, p.kv + t * p.stride + j));
      const __m512d w = _ZGVeN8v_exp(_mm512_sub_pd(g, max_d));
      denom = _mm512_add_pd(denom, w);
      acc = _mm512_add_pd(acc, _mm512_mul_pd(w, kv));  // not fused: as the scalar loop
    }
  }
  _mm512_mask_storeu_ps(entry + j, mask,
                        _mm512_castps256_ps512(_mm512_cvtpd_ps(_mm512_div_pd(acc, denom))));
}

// Channels [j, j + lanes) (lanes <= 4) on AVX2: pool8's operations on four lanes.
__attribute__((target("avx2,fma"))) void pool4(std::span<const PoolRows> parts, int64_t j,
                                               int lanes, float* entry) {
  const __m128i mask = _mm_cmpgt_epi32(_mm_set1_epi32(lanes), _mm_setr_epi32(0, 1, 2, 3));
  __m128 max = _mm_set1_ps(-std::numeric_limits<float>::infinity());
  for (const PoolRows& p : parts) {
    for (int64_t t = 0; t < p.rows; ++t) {
      max = _mm_max_ps(max, _mm_maskload_ps(p.gate + t * p.stride + j, mask));
    }
  }
  const __m256d max_d = _mm256_cvtps_pd(max);
  __m256d denom = _mm256_setzero_pd(), acc = _mm256_setzero_pd();
  for (const PoolRows& p : parts) {
    for (int64_t t = 0; t < p.rows; ++t) {
      const __m256d g = _mm256_cvtps_pd(_mm_maskload_ps(p.gate + t * p.stride + j, mask));
      const __m256d kv = _mm256_cvtps_pd(_mm_maskload_ps(p.kv + t * p.stride + j, mask));
      const __m256d w = _ZGVdN4v_exp(_mm256_sub_pd(g, max_d));
      denom = _mm256_add_pd(denom, w);
      acc = _mm256_add_pd(acc, _mm256_mul_pd(w, kv));  // not fused: as the scalar loop
    }
  }
  _mm_maskstore_ps(entry + j, mask, _mm256_cvtpd_ps(_mm256_div_pd(acc, denom)));
}

}  // namespace

void softmax_pool_scalar(std::span<const PoolRows> parts, int64_t dim, float* entry) {
  for (int64_t j = 0; j < dim; ++j) {
    float max_gate = -std::numeric_limits<float>::infinity();
    for (const PoolRows& p : parts) {
      for (int64_t t = 0; t < p.rows; ++t) {
        max_gate = std::max(max_gate, p.gate[t * p.stride + j]);
      }
    }
    double denom = 0.0, acc = 0.0;
    for (const PoolRows& p : parts) {
      for (int64_t t = 0; t < p.rows; ++t) {
        const double w = std::exp(static_cast<double>(p.gate[t * p.stride + j]) - max_gate);
        denom += w;
        acc += w * p.kv[t * p.stride + j];
      }
    }
    entry[j] = static_cast<float>(acc / denom);
  }
}

void softmax_pool(std::span<const PoolRows> parts, int64_t dim, float* entry) {
  if (!ops::gemm_nt_avx512_available()) {
    if (!ops::gemm_nt_avx2_available()) {
      softmax_pool_scalar(parts, dim, entry);
      return;
    }
    for (int64_t j = 0; j < dim; j += 4) {
      pool4(parts, j, static_cast<int>(std::min<int64_t>(4, dim - j)), entry);
    }
    return;
  }
  for (int64_t j = 0; j < dim; j += 8) {
    const auto mask =
        dim - j >= 8 ? static_cast<__mmask8>(0xFF) : static_cast<__mmask8>((1u << (dim - j)) - 1u);
    pool8(parts, j, mask, entry);
  }
}

}  // namespace tessera::dsv4
