// Y = X . W^T with W in panels (gemm_nt.hpp: pack_weight_panels) on AVX2 + FMA: the outer-product
// tiles of gemm_nt_panels.cpp with a panel's 16 outputs in two 8-lane vectors. Each output is the
// same FMA chain over k = 0, 1, ..., K - 1 from zero as there, so this kernel gives the AVX-512
// panel kernel's bits exactly (tests/unit/gemm_panels_test.cpp), batch-invariant alike. With 16
// vector registers a tile holds at most 12 accumulators: 6 rows x 1 panel (per k: 2 loads of W and
// 6 broadcasts feed 12 FMAs), 3 x 2, 2 x 3 or 1 x 6. The dot-product kernel (gemm_nt_avx2.cpp)
// folds 8 lanes per output and loads both operands; on a 2-core Zen 3 a 64-row product over
// panels ran at about 1.5x its speed (docs/perf.md, Session 22).
// Only functions marked TS_AVX2 use AVX2 (the file is compiled for the baseline ISA).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "ops/gemm_nt.hpp"
#include "ops/gemm_nt_blocks.hpp"  // TS_AVX2

namespace tessera::ops {
namespace {

constexpr int64_t kP = kWeightPanelWidth;  // 16: two vectors of 8
constexpr int kMaxRows = 6;

// Panels per tile for MR rows: 12 accumulators (2 per panel and row), at least 8 independent
// chains for one row (FMA latency 4 cycles, 2 per cycle).
constexpr int panels_for(int mr) { return std::clamp(6 / mr, 1, 6); }

TS_AVX2 inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
TS_AVX2 inline __m256 load8(const uint16_t* p) {  // bf16 -> fp32, exact
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// The next chunk of panels into L2, one line per k step (gemm_nt_panels.cpp's Prefetch).
struct Prefetch {
  const char* next = nullptr;
  const char* end = nullptr;

  TS_AVX2 __attribute__((always_inline)) void step() {
    if (next < end) {
      _mm_prefetch(next, _MM_HINT_T1);
      next += 64;
    }
  }
};

// y[m0 .. m0 + MR)[cols of panels p0 .. p0 + NP) that lie in [n_begin, n_end), over the whole K.
template <int MR, int NP, typename W>
TS_AVX2 inline void tile(const GemmNtArgs& a, const float* const* xr, const W* wp, int64_t m0,
                         int64_t n0, int64_t n_begin, int64_t n_end, Prefetch& pf) {
  __m256 acc[MR][NP][2];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 6
    for (int p = 0; p < NP; ++p) {
      acc[i][p][0] = _mm256_setzero_ps();
      acc[i][p][1] = _mm256_setzero_ps();
    }
  }
  const int64_t K = a.in, stride = a.panel_stride;
#pragma GCC unroll 2
  for (int64_t k = 0; k < K; ++k) {
    pf.step();
    __m256 w[NP][2];
#pragma GCC unroll 6
    for (int p = 0; p < NP; ++p) {
      w[p][0] = load8(wp + p * stride + k * kP);
      w[p][1] = load8(wp + p * stride + k * kP + 8);
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_broadcast_ss(xr[i] + k);
#pragma GCC unroll 6
      for (int p = 0; p < NP; ++p) {
        acc[i][p][0] = _mm256_fmadd_ps(xv, w[p][0], acc[i][p][0]);
        acc[i][p][1] = _mm256_fmadd_ps(xv, w[p][1], acc[i][p][1]);
      }
    }
  }
  // Every loop over acc fully unrolled: an index the compiler cannot resolve keeps acc in memory
  // (stored after every FMA: measured 25 GFLOP/s where the registers give 2-3x that).
#pragma GCC unroll 6
  for (int p = 0; p < NP; ++p) {
    const int64_t c0 = n0 + p * kP;  // panel columns; y's column c0 - a.panel_col0
    const int64_t lo = std::max(c0, n_begin) - c0, hi = std::min(c0 + kP, n_end) - c0;
    if (hi <= lo) {
      continue;
    }
    float* const y = a.y + m0 * a.ldy + (c0 + lo - a.panel_col0);  // y's first column stored
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      if (lo == 0 && hi == kP) {
        _mm256_storeu_ps(y + i * a.ldy, acc[i][p][0]);
        _mm256_storeu_ps(y + i * a.ldy + 8, acc[i][p][1]);
        continue;
      }
      alignas(32) float lanes[kP];  // a panel cut by the range
      _mm256_store_ps(lanes, acc[i][p][0]);
      _mm256_store_ps(lanes + 8, acc[i][p][1]);
      std::copy(lanes + lo, lanes + hi, y + i * a.ldy);
    }
  }
}

// The last R (< NP) panels of a range in one tile of R.
template <int MR, int R, typename W>
TS_AVX2 inline void last_panels(const GemmNtArgs& a, const float* const* xr, const W* panels,
                                int64_t p, int64_t r, int64_t m0, int64_t n_begin, int64_t n_end,
                                Prefetch& pf) {
  if constexpr (R > 0) {
    if (r == R) {
      tile<MR, R>(a, xr, panels + p * a.panel_stride, m0, p * kP, n_begin, n_end, pf);
      return;
    }
    last_panels<MR, R - 1>(a, xr, panels, p, r, m0, n_begin, n_end, pf);
  }
}

// Every tile of MR rows from m0 over the panels holding [n_begin, n_end).
template <int MR, typename W>
TS_AVX2 void rows_over_panels(const GemmNtArgs& a, const W* panels, int64_t m0, int64_t n_begin,
                              int64_t n_end, Prefetch& pf) {
  constexpr int NP = panels_for(MR);
  const float* xr[MR];
  for (int i = 0; i < MR; ++i) {
    xr[i] = a.x + (m0 + i) * a.ldx;
  }
  const int64_t p_begin = n_begin / kP, p_end = (n_end + kP - 1) / kP;
  int64_t p = p_begin;
  for (; p + NP <= p_end; p += NP) {
    tile<MR, NP>(a, xr, panels + p * a.panel_stride, m0, p * kP, n_begin, n_end, pf);
  }
  last_panels<MR, NP - 1>(a, xr, panels, p, p_end - p, m0, n_begin, n_end, pf);
}

// rows_over_panels for mr (1..MR) rows.
template <int MR, typename W>
TS_AVX2 void slice(const GemmNtArgs& a, const W* panels, int mr, int64_t m0, int64_t n_begin,
                   int64_t n_end, Prefetch& pf) {
  if constexpr (MR > 1) {
    if (mr < MR) {
      slice<MR - 1>(a, panels, mr, m0, n_begin, n_end, pf);
      return;
    }
  }
  rows_over_panels<MR>(a, panels, m0, n_begin, n_end, pf);
}

// Panels are walked in chunks of ~128 KiB (L2) while every slice of x meets the chunk.
template <typename W>
TS_AVX2 void range(const GemmNtArgs& a, const W* panels, int64_t n_begin, int64_t n_end) {
  n_begin += a.panel_col0;  // panel columns from here on
  n_end += a.panel_col0;
  constexpr auto kBytes = static_cast<int64_t>(sizeof(W));
  const int64_t panel_bytes = std::max<int64_t>(a.in, 1) * kP * kBytes;
  const int64_t chunk = std::max<int64_t>(1, int64_t{128} * 1024 / panel_bytes) * kP;  // columns
  for (int64_t first = n_begin / kP * kP; first < n_end; first += chunk) {
    const int64_t nc = std::max(n_begin, first), nc_end = std::min(n_end, first + chunk);
    Prefetch pf;
    if (nc_end < n_end && a.rows > kMaxRows && a.panel_stride == a.in * kP) {
      pf.next = reinterpret_cast<const char*>(panels + nc_end / kP * a.panel_stride);
      const int64_t next_panels = (std::min(n_end, nc_end + chunk) - nc_end + kP - 1) / kP;
      pf.end = pf.next + next_panels * a.panel_stride * kBytes;
    }
    for (int64_t m0 = 0; m0 < a.rows; m0 += kMaxRows) {
      slice<kMaxRows>(a, panels, static_cast<int>(std::min<int64_t>(kMaxRows, a.rows - m0)), m0, nc,
                      nc_end, pf);
    }
  }
}

}  // namespace

namespace gemm_detail {

TS_AVX2 void gemm_nt_range_panels_avx2(const GemmNtArgs& a, int64_t n_begin, int64_t n_end) {
  if (a.w_panels_bf16 != nullptr) {
    range(a, a.w_panels_bf16, n_begin, n_end);
  } else {
    range(a, a.w_panels, n_begin, n_end);
  }
}

}  // namespace gemm_detail

}  // namespace tessera::ops
