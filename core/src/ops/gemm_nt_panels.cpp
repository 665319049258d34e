// Y = X . W^T with W packed into panels (gemm_nt.hpp: pack_weight_panels): the "outer-product"
// register blocking of GotoBLAS-style kernels (Goto & van de Geijn, "Anatomy of high-performance
// matrix multiplication", 2008), with the weight packed once at load instead of on every call.
//
// A tile is MR rows of x times NP panels (16 outputs each, one vector): per k, NP vector loads of
// W, MR broadcasts of x[m][k] and MR * NP FMAs, with no horizontal sums at the end. Each output is
// one FMA chain over k = 0, 1, ..., K - 1 from zero, whatever the tile, the row count or the
// thread split, so the kernel is batch-invariant: a decode row (MR = 1) gets the bits it gets in a
// batch of 64. On the Xeon VM of sessions 12-13 a 12 x 32 tile ran at the FMA peak from L1 where
// the dot-product blocking of gemm_nt_avx512.cpp reached ~80% (its lane folds and two-stream
// loads).
#include <algorithm>

#include "ops/gemm_nt.hpp"
#include "ops/gemm_nt_blocks.hpp"

namespace tessera::ops {
namespace {

using namespace gemm_detail;  // NOLINT(google-build-using-namespace): this file's own helpers

constexpr int64_t kP = kWeightPanelWidth;
constexpr int kMaxRows = 6;  // rows of x per tile

// Panels per tile for MR rows: about 24 accumulators (of 32 registers), at least 8 for one row so
// that the FMA latency (4 cycles, 2 per cycle) is covered by independent chains.
constexpr int panels_for(int mr) { return std::clamp(24 / mr, 2, 8); }

// The next chunk of panels, asked into L2 while this one is computed: one of its lines per k step
// of every tile until all are asked for (without it each chunk's first pass of x waits on W).
// Panels of a whole K lie end to end, so a chunk is one block of bytes [next, end): two registers
// in the tile's loop, which has few to spare. One line a step rather than two spreads the asks
// over more of the chunk's passes (a 64-row chunk has 11 passes of K steps for its K * 4 lines),
// leaving the line fill buffers to the loads: with the k loop unrolled twice, `tessera bench
// engine` at 64 sequences 2899 -> 3018 tok/s (4 interleaved pairs, docs/perf.md Session 17).
struct Prefetch {
  const char* next = nullptr;
  const char* end = nullptr;

  TS_AVX512 __attribute__((always_inline)) void step() {
    if (next < end) {
      _mm_prefetch(next, _MM_HINT_T1);
      next += 64;
    }
  }
};

// y[m0 .. m0 + MR)[cols of panels p0 .. p0 + NP) that lie in [n_begin, n_end), over the whole K.
// xr: MR row pointers; wp: panel p0's first k (panels a.panel_stride values apart).
template <int MR, int NP, typename W>
TS_AVX512 inline void tile(const GemmNtArgs& a, const float* const* xr, const W* wp, int64_t m0,
                           int64_t n0, int64_t n_begin, int64_t n_end, Prefetch& pf) {
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
  // FMA peak as it was, 86-98% unrolled; the bits are the same, each sum one FMA chain in k order).
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

// The last R (< NP) panels of a range in one tile of R: independent chains even for one row.
template <int MR, int R, typename W>
TS_AVX512 inline void last_panels(const GemmNtArgs& a, const float* const* xr, const W* panels,
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
TS_AVX512 void rows_over_panels(const GemmNtArgs& a, const W* panels, int64_t m0, int64_t n_begin,
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
TS_AVX512 void slice(const GemmNtArgs& a, const W* panels, int mr, int64_t m0, int64_t n_begin,
                     int64_t n_end, Prefetch& pf) {
  if constexpr (MR > 1) {
    if (mr < MR) {
      slice<MR - 1>(a, panels, mr, m0, n_begin, n_end, pf);
      return;
    }
  }
  rows_over_panels<MR>(a, panels, m0, n_begin, n_end, pf);
}

// A chunk of one or two panels (a product of few outputs: mHC's 24 mixing logits of a 2048-wide
// row) meets this many rows at a time: a 6-row tile there fills only 6-12 accumulators and loads
// W (from L2) once per 6-12 FMAs; 12 rows halve the loads of W per FMA.
constexpr int kNarrowRows = 12;

// mr (1..MR) rows of x over the one or two panels holding [n_begin, n_end).
template <int MR, typename W>
TS_AVX512 void narrow_slice(const GemmNtArgs& a, const W* panels, int mr, int64_t m0,
                            int64_t n_begin, int64_t n_end, Prefetch& pf) {
  if constexpr (MR > 1) {
    if (mr < MR) {
      narrow_slice<MR - 1>(a, panels, mr, m0, n_begin, n_end, pf);
      return;
    }
  }
  const float* xr[MR];
  for (int i = 0; i < MR; ++i) {
    xr[i] = a.x + (m0 + i) * a.ldx;
  }
  const int64_t p = n_begin / kP;
  if ((n_end + kP - 1) / kP - p == 2) {
    tile<MR, 2>(a, xr, panels + p * a.panel_stride, m0, p * kP, n_begin, n_end, pf);
  } else {
    tile<MR, 1>(a, xr, panels + p * a.panel_stride, m0, p * kP, n_begin, n_end, pf);
  }
}

// Panels are walked in chunks of ~128 KiB (L2) while every slice of x meets the chunk.
template <typename W>
TS_AVX512 void range(const GemmNtArgs& a, const W* panels, int64_t n_begin, int64_t n_end) {
  n_begin += a.panel_col0;  // panel columns from here on
  n_end += a.panel_col0;
  constexpr auto kBytes = static_cast<int64_t>(sizeof(W));
  const int64_t panel_bytes = std::max<int64_t>(a.in, 1) * kP * kBytes;
  // At least a full tile's panels: with a long K (mHC's 2048) one panel a chunk made every tile
  // 6 x 1 (6 FMAs per load of W, x read once per panel).
  const int64_t chunk =
      std::max<int64_t>(panels_for(kMaxRows), int64_t{128} * 1024 / panel_bytes) * kP;  // columns
  for (int64_t first = n_begin / kP * kP; first < n_end; first += chunk) {
    const int64_t nc = std::max(n_begin, first), nc_end = std::min(n_end, first + chunk);
    Prefetch pf;
    // With a single slice of x there is no second pass to hide the fetch behind; a part of K
    // (input_columns) leaves gaps between the panels.
    if (nc_end < n_end && a.rows > kMaxRows && a.panel_stride == a.in * kP) {
      pf.next = reinterpret_cast<const char*>(panels + nc_end / kP * a.panel_stride);
      const int64_t next_panels = (std::min(n_end, nc_end + chunk) - nc_end + kP - 1) / kP;
      pf.end = pf.next + next_panels * a.panel_stride * kBytes;
    }
    if ((nc_end + kP - 1) / kP - nc / kP <= 2 && a.rows > kMaxRows) {
      for (int64_t m0 = 0; m0 < a.rows; m0 += kNarrowRows) {
        narrow_slice<kNarrowRows>(a, panels,
                                  static_cast<int>(std::min<int64_t>(kNarrowRows, a.rows - m0)), m0,
                                  nc, nc_end, pf);
      }
      continue;
    }
    for (int64_t m0 = 0; m0 < a.rows; m0 += kMaxRows) {
      slice<kMaxRows>(a, panels, static_cast<int>(std::min<int64_t>(kMaxRows, a.rows - m0)), m0, nc,
                      nc_end, pf);
    }
  }
}

}  // namespace

namespace gemm_detail {

TS_AVX512 void gemm_nt_range_panels(const GemmNtArgs& a, int64_t n_begin, int64_t n_end) {
  if (a.w_panels_bf16 != nullptr) {
    range(a, a.w_panels_bf16, n_begin, n_end);
  } else {
    range(a, a.w_panels, n_begin, n_end);
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
