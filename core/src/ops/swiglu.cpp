#include "ops/swiglu.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "ops/gemm_nt.hpp"  // gemm_nt_avx512_available, gemm_nt_avx2_available

// glibc's libmvec: expf on 16 lanes (the x86-64 vector function ABI name of expf for AVX-512).
// NOLINTNEXTLINE(bugprone-reserved-identifier): glibc exports it under this name
extern "C" __attribute__((target("avx512f"))) __m512 _ZGVeN16v_expf(__m512 x);
// The same on 8 lanes for AVX2 (the ABI's "d" variant).
// NOLINTNEXTLINE(bugprone-reserved-identifier): glibc exports it under this name
extern "C" __attribute__((target("avx2,fma"))) __m256 _ZGVdN8v_expf(__m256 x);

namespace tessera::ops {
namespace {

__attribute__((target("avx512f"))) void swiglu_avx512(float* g, const float* u, int64_t count,
                                                      float limit) {
  const __m512 one = _mm512_set1_ps(1.0f), hi = _mm512_set1_ps(limit), lo = _mm512_set1_ps(-limit);
  for (int64_t i = 0; i < count; i += 16) {
    const auto mask = count - i >= 16 ? static_cast<__mmask16>(0xFFFF)
                                      : static_cast<__mmask16>((1u << (count - i)) - 1u);
    __m512 x = _mm512_maskz_loadu_ps(mask, g + i), y = _mm512_maskz_loadu_ps(mask, u + i);
    if (limit > 0) {
      x = _mm512_min_ps(x, hi);
      y = _mm512_max_ps(_mm512_min_ps(y, hi), lo);
    }
    const __m512 e = _ZGVeN16v_expf(_mm512_sub_ps(_mm512_setzero_ps(), x));  // exp(-x)
    const __m512 h = _mm512_mul_ps(_mm512_div_ps(x, _mm512_add_ps(one, e)), y);
    _mm512_mask_storeu_ps(g + i, mask, h);
  }
}

// Whole vectors of 8 here, the tail by swiglu_scalar.
__attribute__((target("avx2,fma"))) void swiglu_avx2(float* g, const float* u, int64_t count,
                                                     float limit) {
  const __m256 one = _mm256_set1_ps(1.0f), hi = _mm256_set1_ps(limit), lo = _mm256_set1_ps(-limit);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256 x = _mm256_loadu_ps(g + i), y = _mm256_loadu_ps(u + i);
    if (limit > 0) {
      x = _mm256_min_ps(x, hi);
      y = _mm256_max_ps(_mm256_min_ps(y, hi), lo);
    }
    const __m256 e = _ZGVdN8v_expf(_mm256_sub_ps(_mm256_setzero_ps(), x));  // exp(-x)
    _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), y));
  }
  swiglu_scalar(g + i, u + i, count - i, limit);
}

}  // namespace

void swiglu_scalar(float* g, const float* u, int64_t count, float limit) {
  for (int64_t i = 0; i < count; ++i) {
    float gi = g[i], ui = u[i];
    if (limit > 0) {
      gi = std::min(gi, limit);
      ui = std::clamp(ui, -limit, limit);
    }
    g[i] = gi / (1.0f + std::exp(-gi)) * ui;
  }
}

void swiglu(float* g, const float* u, int64_t count, float limit) {
  if (gemm_nt_avx512_available()) {
    swiglu_avx512(g, u, count, limit);
  } else if (gemm_nt_avx2_available()) {
    swiglu_avx2(g, u, count, limit);
  } else {
    swiglu_scalar(g, u, count, limit);
  }
}

}  // namespace tessera::ops
