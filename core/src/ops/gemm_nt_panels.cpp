// Y = X . W^T with W packed into panels (gemm_nt.hpp: pack_weight_panels): the "outer-product"
// register blocking of GotoBLAS-style kernels (Goto & van de Geijn, "Anatomy of high-performance
// matrix multiplication", 2008), with the weight packed once at load instead of on every call.
//
// A tile is MR rows of x times NP panels (16 outputs each, one vector): per k, NP vector loads of
// W, MR broadcasts of x[m][k] and MR * NP FMAs, with no horizontal sums at the end. Each output is
// one FMA chain over k = 0, 1, ..., K - 1 from zero, whatever the tile, the row count or the
// thread split, so the kernel is batch-invariant: a decode row (MR = 1) gets the bits it gets in a
// batch of 64. On the Xeon (docs/perf.md "Machines") a 12 x 32 tile runs at the FMA peak from L1
// where the dot-product blocking of gemm_nt_avx512.cpp reaches ~80% (its lane folds and
// two-stream loads).
#include <algorithm>

#include "ops/gemm_nt.hpp"
#include "ops/gemm_nt_blocks.hpp"

#define TS_PANELS_TARGET TS_AVX512
#include "ops/gemm_panel_walk.hpp"  // the walk over chunks, slices and tiles

namespace tessera::ops {
namespace {

using namespace gemm_detail;  // NOLINT(google-build-using-namespace): this file's own helpers

constexpr int64_t kP = kWeightPanelWidth;

// Panels per tile for MR rows: about 24 accumulators (of 32 registers), at least 8 for one row so
// that the FMA latency (4 cycles, 2 per cycle) is covered by independent chains.
constexpr int avx512_panels_for(int mr) { return std::clamp(24 / mr, 2, 8); }

// The tiles of gemm_panel_walk.hpp on AVX-512: a panel's 16 outputs in one vector.
struct Avx512Panels {
  static constexpr int kMaxRows = 6;  // rows of x per tile
  static constexpr int panels_for(int mr) { return avx512_panels_for(mr); }

  // At least a full tile's panels a chunk: with a long K (mHC's 2048) one panel a chunk made every
  // tile 6 x 1 (6 FMAs per load of W, x read once per panel).
  static constexpr int kMinChunkPanels = avx512_panels_for(kMaxRows);

  // A chunk of one or two panels (a product of few outputs: mHC's 24 mixing logits of a 2048-wide
  // row) meets this many rows at a time: a 6-row tile there fills only 6-12 accumulators and
  // loads W (from L2) once per 6-12 FMAs; 12 rows halve the loads of W per FMA.
  static constexpr int kNarrowRows = 12;

  // y[m0 .. m0 + MR)[cols of panels p0 .. p0 + NP) that lie in [n_begin, n_end), over the whole K.
  // xr: MR row pointers; wp: panel p0's first k (panels a.panel_stride values apart).
  template <int MR, int NP, typename W>
  TS_AVX512 static void tile(const GemmNtArgs& a, const float* const* xr, const W* wp, int64_t m0,
                             int64_t n0, int64_t n_begin, int64_t n_end, PanelPrefetch& pf) {
    __m512 acc[MR][NP];
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) {
        acc[i][p] = _mm512_setzero_ps();
      }
    }
    const int64_t K = a.in, stride = a.panel_stride;
    // Two k per iteration: the loop's own work (counter, prefetch test) once per 2 * MR * NP FMAs
    // (a standalone copy of this loop over panels in L1 or L2 ran at 78-84% of this VM's measured
    // FMA peak as it was, 86-98% unrolled; the bits are the same, each sum one FMA chain in k
    // order).
#pragma GCC unroll 2
    for (int64_t k = 0; k < K; ++k) {
      pf.step();
      __m512 w[NP];
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) {
        w[p] = load_w(wp + p * stride + k * kP);  // bf16 panels give fp32 panels' bits
      }
#pragma GCC unroll 12
      for (int i = 0; i < MR; ++i) {
        const __m512 xv = _mm512_set1_ps(xr[i][k]);
#pragma GCC unroll 8
        for (int p = 0; p < NP; ++p) {
          acc[i][p] = _mm512_fmadd_ps(xv, w[p], acc[i][p]);
        }
      }
    }
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) {
      const int64_t c0 = n0 + p * kP;  // panel columns; y's column c0 - a.panel_col0
      const int64_t lo = std::max(c0, n_begin) - c0, hi = std::min(c0 + kP, n_end) - c0;
      if (hi <= lo) {
        continue;
      }
      float* const y = a.y + m0 * a.ldy + (c0 + lo - a.panel_col0);  // y's first column stored
      if (lo == 0 && a.panel_col0 == 0) {
        const auto mask = static_cast<__mmask16>((1u << hi) - 1u);
#pragma GCC unroll 12
        for (int i = 0; i < MR; ++i) {
          _mm512_mask_storeu_ps(y + i * a.ldy, mask, acc[i][p]);
        }
        continue;
      }
      alignas(64) float lanes[kP];  // a panel cut at the product's first column
      for (int i = 0; i < MR; ++i) {
        _mm512_store_ps(lanes, acc[i][p]);
        std::copy(lanes + lo, lanes + hi, y + i * a.ldy);
      }
    }
  }
};

}  // namespace

namespace gemm_detail {

TS_AVX512 void gemm_nt_range_panels(const GemmNtArgs& a, int64_t n_begin, int64_t n_end) {
  if (a.w_panels_bf16 != nullptr) {
    walk_panels<Avx512Panels>(a, a.w_panels_bf16, n_begin, n_end);
  } else {
    walk_panels<Avx512Panels>(a, a.w_panels, n_begin, n_end);
  }
}

}  // namespace gemm_detail

namespace {

template <typename T>
void pack(const T* w, int64_t out, int64_t in, T* panels) {
  const int64_t count = weight_panel_count(out);
  for (int64_t p = 0; p < count; ++p) {
    T* dst = panels + p * in * kP;
    for (int64_t j = 0; j < kP; ++j) {
      const int64_t n = p * kP + j;
      for (int64_t k = 0; k < in; ++k) {
        dst[k * kP + j] = n < out ? w[n * in + k] : T{0};
      }
    }
  }
}

template <typename T>
void unpack(const T* w_panels, int64_t panel_stride, int64_t col0, int64_t out, int64_t in, T* w,
            int64_t ldw) {
  for (int64_t n = 0; n < out; ++n) {
    const int64_t c = n + col0;
    const T* src = w_panels + c / kP * panel_stride + c % kP;
    for (int64_t k = 0; k < in; ++k) {
      w[n * ldw + k] = src[k * kP];
    }
  }
}

}  // namespace

void pack_weight_panels(const float* w, int64_t out, int64_t in, float* panels) {
  pack(w, out, in, panels);
}
void pack_weight_panels(const uint16_t* w, int64_t out, int64_t in, uint16_t* panels) {
  pack(w, out, in, panels);
}
void unpack_weight_panels(const float* w_panels, int64_t panel_stride, int64_t col0, int64_t out,
                          int64_t in, float* w, int64_t ldw) {
  unpack(w_panels, panel_stride, col0, out, in, w, ldw);
}
void unpack_weight_panels(const uint16_t* w_panels, int64_t panel_stride, int64_t col0, int64_t out,
                          int64_t in, uint16_t* w, int64_t ldw) {
  unpack(w_panels, panel_stride, col0, out, in, w, ldw);
}

}  // namespace tessera::ops
