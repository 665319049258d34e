// The AVX2 + FMA body of gemm_nt.hpp, for CPUs without AVX-512 (AMD Zen 2/3, Intel before
// Skylake-SP): the same dot-product method on 8 lanes instead of 16. acc[i][j] lane l = sum over
// k = l (mod 8), k ascending, of x[m_i][k] * w[n_j][k] (one FMA each); the 8 lanes are then summed
// as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), whatever block the output falls in, so
// the kernel is batch-invariant like the AVX-512 one (its bits are not the AVX-512 kernel's: the
// lanes differ). Without it these CPUs ran OpenBLAS, whose bits depend on the shape and which
// repacked W on every call (measured on a 2-core Zen 3: the 50m model's 64-row step 258 ms).
// Only functions marked TS_AVX2 use AVX2 (the file is compiled for the baseline ISA).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "ops/gemm_nt.hpp"
#include "ops/gemm_nt_blocks.hpp"  // TS_AVX2, cols_per_chunk_for, rows_per_chunk, next_chunk_for

namespace tessera::ops {
namespace {

using gemm_detail::NextChunk;

constexpr int kLanes8 = 8;
// 3 rows x 4 columns: 12 accumulators, the 3 rows of x and one W vector at a time fill the 16
// registers (per 8 k: 7 loads feed 12 FMAs). A multiple of it divides kGemmNtRowsPerBlock.
constexpr int kRows3 = 3;
constexpr int64_t kCols4 = 4;
static_assert(kGemmNtRowsPerBlock % kRows3 == 0);

using gemm_detail::load_w8;  // 8 weights as fp32, widened from bf16 exactly

// The first `count` (< 8) values, zeros after; never reads past them.
TS_AVX2 inline __m256 load_tail(__m256i mask, int64_t /*count*/, const float* p) {
  return _mm256_maskload_ps(p, mask);
}
TS_AVX2 inline __m256 load_tail(__m256i /*mask*/, int64_t count, const uint16_t* p) {
  alignas(16) uint16_t tmp[kLanes8] = {};
  std::copy_n(p, count, tmp);
  return load_w8(tmp);
}

TS_AVX2 inline void prefetch_next(const NextChunk& next, int64_t step, int64_t& hit,
                                  int64_t offset) {
  if (next.rows == nullptr || step != hit) {
    return;
  }
  hit += next.period;
  for (int j = 0; j < 4; ++j) {
    const char* p = next.rows + j * next.ldw + offset;
    if (next.into_l1) {
      _mm_prefetch(p, _MM_HINT_T0);
    } else {
      _mm_prefetch(p, _MM_HINT_T1);
    }
  }
}

// A row's 4 accumulators -> [sum a0, sum a1, sum a2, sum a3], each over its lanes in the fixed
// order above: hadd pairs (l0 + l1, l2 + l3 | l4 + l5, l6 + l7), hadd again, then low + high half.
TS_AVX2 inline __m128 fold_row(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

TS_AVX2 inline void store_row(__m128 sums, float* y, int nr) {
  if (nr == 4) {
    _mm_storeu_ps(y, sums);
    return;
  }
  alignas(16) float tmp[4];
  _mm_store_ps(tmp, sums);
  std::copy_n(tmp, nr, y);
}

// MR (1..3) rows of x times 4 rows of W over the whole K, stored into y (nr columns).
template <int MR, typename W>
TS_AVX2 void block(const float* const* xr, const W* const* wr, int64_t K, const NextChunk& next,
                   float* y, int64_t ldy, int nr) {
  // Every loop over acc is fully unrolled (constant indices keep it in registers).
  __m256 acc[MR][4];
#pragma GCC unroll 3
  for (auto& row : acc) {
#pragma GCC unroll 4
    for (auto& a : row) {
      a = _mm256_setzero_ps();
    }
  }
  int64_t k = 0;
  int64_t hit = next.phase;
  for (int64_t step = 0; k + kLanes8 <= K; k += kLanes8, ++step) {
    prefetch_next(next, step, hit, k * static_cast<int64_t>(sizeof(W)));
    __m256 xv[MR];
#pragma GCC unroll 3
    for (int i = 0; i < MR; ++i) {
      xv[i] = _mm256_loadu_ps(xr[i] + k);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256 wv = load_w8(wr[j] + k);
#pragma GCC unroll 3
      for (int i = 0; i < MR; ++i) {
        acc[i][j] = _mm256_fmadd_ps(xv[i], wv, acc[i][j]);
      }
    }
  }
  if (k < K) {  // the tail: zeros past K on both sides, so the lanes' sums are unchanged
    alignas(32) int32_t bits[kLanes8];
    for (int l = 0; l < kLanes8; ++l) {
      bits[l] = l < K - k ? -1 : 0;
    }
    const __m256i mask = _mm256_load_si256(reinterpret_cast<const __m256i*>(bits));
    __m256 xv[MR];
#pragma GCC unroll 3
    for (int i = 0; i < MR; ++i) {
      xv[i] = _mm256_maskload_ps(xr[i] + k, mask);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256 wv = load_tail(mask, K - k, wr[j] + k);
#pragma GCC unroll 3
      for (int i = 0; i < MR; ++i) {
        acc[i][j] = _mm256_fmadd_ps(xv[i], wv, acc[i][j]);
      }
    }
  }
#pragma GCC unroll 3
  for (int i = 0; i < MR; ++i) {
    store_row(fold_row(acc[i][0], acc[i][1], acc[i][2], acc[i][3]), y + i * ldy, nr);
  }
}

// Loop tiling as the AVX-512 kernel's (gemm_nt_blocks.hpp): a chunk of W stays in L2 while every
// 3-row slice of x meets all of it, and the next chunk is prefetched over those passes.
template <typename W>
TS_AVX2 void gemm_nt_range(const GemmNtArgs& a, const W* w, int64_t n_begin, int64_t n_end) {
  const int64_t K = std::max<int64_t>(a.in, 1);
  const int64_t n_chunk = gemm_detail::cols_per_chunk_for(a.rows, K);
  const int64_t m_chunk = gemm_detail::rows_per_chunk(K);
  for (int64_t nc = n_begin; nc < n_end; nc += n_chunk) {
    const int64_t nc_end = std::min(n_end, nc + n_chunk);
    for (int64_t mc = 0; mc < a.rows; mc += m_chunk) {
      const int64_t mc_end = std::min(a.rows, mc + m_chunk);
      const int64_t passes = (mc_end - mc + kRows3 - 1) / kRows3;
      const bool last_x_chunk = mc_end == a.rows;
      for (int64_t m0 = mc; m0 < mc_end; m0 += kRows3) {
        const int mr = static_cast<int>(std::min<int64_t>(kRows3, mc_end - m0));
        const float* xr[kRows3];
        for (int i = 0; i < kRows3; ++i) {
          xr[i] = a.x + (m0 + std::min(i, mr - 1)) * a.ldx;
        }
        for (int64_t n0 = nc; n0 < nc_end; n0 += kCols4) {
          const int nr = static_cast<int>(std::min(kCols4, nc_end - n0));
          const W* wr[4];  // a short last block repeats its last row; those sums are not stored
          for (int j = 0; j < 4; ++j) {
            wr[j] = w + (n0 + std::min(j, nr - 1)) * a.ldw;
          }
          const NextChunk next = gemm_detail::next_chunk_for(
              a, w, n0, n_end, n_chunk, (m0 - mc) / kRows3, passes, last_x_chunk);
          float* y = a.y + m0 * a.ldy + n0;
          if (mr == 3) {
            block<3>(xr, wr, a.in, next, y, a.ldy, nr);
          } else if (mr == 2) {
            block<2>(xr, wr, a.in, next, y, a.ldy, nr);
          } else {
            block<1>(xr, wr, a.in, next, y, a.ldy, nr);
          }
        }
      }
    }
  }
}

}  // namespace

bool gemm_nt_avx2_available() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}

TS_AVX2 void gemm_nt_avx2(const GemmNtArgs& a, int64_t n_begin, int64_t n_end) {
  if (a.in_panels()) {
    gemm_detail::gemm_nt_range_panels_avx2(a, n_begin, n_end);
  } else if (a.w_bf16 != nullptr) {
    gemm_nt_range(a, a.w_bf16, n_begin, n_end);
  } else {
    gemm_nt_range(a, a.w, n_begin, n_end);
  }
}

}  // namespace tessera::ops
