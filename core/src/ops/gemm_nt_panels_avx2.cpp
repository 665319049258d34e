// Y = X . W^T with W in panels (gemm_nt.hpp: pack_weight_panels) on AVX2 + FMA: the outer-product
// tiles of gemm_nt_panels.cpp with a panel's 16 outputs in two 8-lane vectors. Each output is the
// same FMA chain over k = 0, 1, ..., K - 1 from zero as there, so this kernel gives the AVX-512
// panel kernel's bits exactly (tests/unit/gemm_panels_test.cpp), batch-invariant alike. With 16
// vector registers a tile holds at most 12 accumulators: 6 rows x 1 panel (per k: 2 loads of W and
// 6 broadcasts feed 12 FMAs), 3 x 2, 2 x 3 or 1 x 6. The dot-product kernel (gemm_nt_avx2.cpp)
// folds 8 lanes per output and loads both operands; on a 2-core Zen 3 a 64-row product over
// panels runs at about 1.5x its speed (docs/perf.md "Our AVX2 GEMM kernels").
// Only functions marked TS_AVX2 use AVX2 (the file is compiled for the baseline ISA).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "ops/gemm_nt.hpp"
#include "ops/gemm_nt_blocks.hpp"  // TS_AVX2

#define TS_PANELS_TARGET TS_AVX2
#include "ops/gemm_panel_walk.hpp"  // the walk over chunks, slices and tiles

namespace tessera::ops {
namespace {

constexpr int64_t kP = kWeightPanelWidth;  // 16: two vectors of 8

using gemm_detail::load_w8;  // 8 weights as fp32, widened from bf16 exactly

// The tiles of gemm_panel_walk.hpp on AVX2: a panel's 16 outputs in two vectors.
struct Avx2Panels {
  static constexpr int kMaxRows = 6;

  // Panels per tile for MR rows: 12 accumulators (2 per panel and row), at least 8 independent
  // chains for one row (FMA latency 4 cycles, 2 per cycle).
  static constexpr int panels_for(int mr) { return std::clamp(6 / mr, 1, 6); }

  static constexpr int kMinChunkPanels = 1;
  static constexpr int kNarrowRows = 0;  // a tile of 6 rows x 1 panel is already the narrow one

  // y[m0 .. m0 + MR)[cols of panels p0 .. p0 + NP) that lie in [n_begin, n_end), over the whole K.
  template <int MR, int NP, typename W>
  TS_AVX2 static void tile(const GemmNtArgs& a, const float* const* xr, const W* wp, int64_t m0,
                           int64_t n0, int64_t n_begin, int64_t n_end, PanelPrefetch& pf) {
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
        w[p][0] = load_w8(wp + p * stride + k * kP);
        w[p][1] = load_w8(wp + p * stride + k * kP + 8);
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
};

}  // namespace

namespace gemm_detail {

TS_AVX2 void gemm_nt_range_panels_avx2(const GemmNtArgs& a, int64_t n_begin, int64_t n_end) {
  if (few_columns_avx2_takes(a, n_begin, n_end)) {
    gemm_nt_few_columns_avx2(a, n_begin, n_end);
    return;
  }
  if (a.w_panels_bf16 != nullptr) {
    walk_panels<Avx2Panels>(a, a.w_panels_bf16, n_begin, n_end);
  } else {
    walk_panels<Avx2Panels>(a, a.w_panels, n_begin, n_end);
  }
}

}  // namespace gemm_detail

}  // namespace tessera::ops
