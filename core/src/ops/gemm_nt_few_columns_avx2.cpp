// Y = X . W^T for at most 24 output columns of W in panels on AVX2 + FMA: the mHC mix (24 x 2048,
// 32 tokens a thread in a 64-sequence step of 50m). The panel walk (gemm_panel_walk.hpp) gives it
// 6-row tiles of one 16-column panel, so the last panel's 8 padding columns cost a third of the
// FMAs, and every tile streams its panel's whole K (128 KiB at K = 2048) from L2: 56 GFLOP/s on
// one Zen 3 thread inside the step. Here a tile holds all the columns in NV vectors of 8 (1.5
// panels: 3 vectors, no padding) for MR = 12 / NV rows, and K goes in blocks of kBlockK, so a
// block of W stays in L1 while every tile of rows meets it; the accumulators go to a scratch
// between blocks. `tessera bench gemm`, 32 x 24 x 2048 on one thread: hot 34-35 us against 44-46
// in the walk's tiles, cold W 44-47 against 52-55 (blocks of 64 to 2048 k steps within the noise
// of each other; asking for the next block ahead is slower). Each output is still one FMA chain
// over k = 0, 1, ..., K - 1 from zero, so the bits are the walk's
// (tests/unit/gemm_panels_test.cpp).
// Only functions marked TS_AVX2 use AVX2 (the file is compiled for the baseline ISA).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/gemm_nt.hpp"
#include "ops/gemm_nt_blocks.hpp"  // TS_AVX2

namespace tessera::ops {
namespace {

constexpr int64_t kP = kWeightPanelWidth;  // 16 columns a panel, two vectors of 8
constexpr int64_t kBlockK = 128;  // k steps a block: its W, two panels of 128 x 16 floats, 16 KiB
constexpr int64_t kMaxColumns = 24;

using gemm_detail::load_w8;  // 8 weights as fp32, widened from bf16 exactly

// Rows per tile for NV vectors of columns: 12 accumulators (16 registers: + NV of W + 1 of x).
constexpr int rows_for(int nv) { return 12 / nv; }

// Rows [0, MR) of the tile over k in [k0, k1): acc (MR rows of NV * 8 floats) is continued from
// the scratch, or started at zero when k0 == 0, and written back.
template <int NV, int MR, typename W>
TS_AVX2 void tile(const float* const* xr, const W* const* wv, int64_t k0, int64_t k1,
                  float* acc_at) {
  __m256 acc[MR][NV];
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v) {
      acc[i][v] = k0 == 0 ? _mm256_setzero_ps()
                          : _mm256_loadu_ps(acc_at + static_cast<int64_t>(i * NV + v) * 8);
    }
  }
#pragma GCC unroll 2
  for (int64_t k = k0; k < k1; ++k) {
    __m256 w[NV];
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v) {
      w[v] = load_w8(wv[v] + k * kP);
    }
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_broadcast_ss(xr[i] + k);
#pragma GCC unroll 3
      for (int v = 0; v < NV; ++v) {
        acc[i][v] = _mm256_fmadd_ps(xv, w[v], acc[i][v]);
      }
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v) {
      _mm256_storeu_ps(acc_at + static_cast<int64_t>(i * NV + v) * 8, acc[i][v]);
    }
  }
}

// tile for mr (1..MR) rows.
template <int NV, int MR, typename W>
TS_AVX2 void tile_rows(int mr, const float* const* xr, const W* const* wv, int64_t k0, int64_t k1,
                       float* acc_at) {
  if constexpr (MR > 1) {
    if (mr < MR) {
      tile_rows<NV, MR - 1>(mr, xr, wv, k0, k1, acc_at);
      return;
    }
  }
  tile<NV, MR>(xr, wv, k0, k1, acc_at);
}

template <int NV, typename W>
TS_AVX2 void few_columns(const GemmNtArgs& a, const W* panels, int64_t n_begin, int64_t n_end) {
  constexpr int MR = rows_for(NV);
  const W* wv[NV];  // vector v: panel columns c0 + 8 v .. + 8, at k = 0
  const int64_t c0 = n_begin + a.panel_col0;
  for (int v = 0; v < NV; ++v) {
    const int64_t c = c0 + int64_t{8} * v;
    wv[v] = panels + c / kP * a.panel_stride + c % kP;
  }
  thread_local std::vector<float> scratch;  // [rows, NV * 8] accumulators between blocks of K
  scratch.resize(static_cast<size_t>(a.rows * NV * 8));
  for (int64_t k0 = 0; k0 < a.in; k0 += kBlockK) {
    const int64_t k1 = std::min(a.in, k0 + kBlockK);
    for (int64_t m0 = 0; m0 < a.rows; m0 += MR) {
      const int mr = static_cast<int>(std::min<int64_t>(MR, a.rows - m0));
      const float* xr[MR];
      for (int i = 0; i < MR; ++i) {
        xr[i] = a.x + (m0 + std::min(i, mr - 1)) * a.ldx;
      }
      tile_rows<NV, MR>(mr, xr, wv, k0, k1, scratch.data() + m0 * NV * 8);
    }
  }
  const int64_t columns = n_end - n_begin;
  for (int64_t m = 0; m < a.rows; ++m) {
    std::copy_n(scratch.data() + m * NV * 8, columns, a.y + m * a.ldy + n_begin);
  }
}

template <typename W>
TS_AVX2 void few_columns_of(const GemmNtArgs& a, const W* panels, int64_t n_begin, int64_t n_end) {
  switch ((n_end - n_begin + 7) / 8) {
    case 1:
      few_columns<1>(a, panels, n_begin, n_end);
      break;
    case 2:
      few_columns<2>(a, panels, n_begin, n_end);
      break;
    default:
      few_columns<3>(a, panels, n_begin, n_end);
      break;
  }
}

}  // namespace

namespace gemm_detail {

bool few_columns_avx2_takes(const GemmNtArgs& a, int64_t n_begin, int64_t n_end) {
  return a.in_panels() && n_end > n_begin && n_end - n_begin <= kMaxColumns &&
         (n_begin + a.panel_col0) % 8 == 0 && a.rows >= kFewColumnsMinRows && a.in > 0;
}

TS_AVX2 void gemm_nt_few_columns_avx2(const GemmNtArgs& a, int64_t n_begin, int64_t n_end) {
  if (a.w_panels_bf16 != nullptr) {
    few_columns_of(a, a.w_panels_bf16, n_begin, n_end);
  } else {
    few_columns_of(a, a.w_panels, n_begin, n_end);
  }
}

}  // namespace gemm_detail

}  // namespace tessera::ops
