// How the panel kernels (gemm_nt_panels.cpp on AVX-512, gemm_nt_panels_avx2.cpp on AVX2 + FMA)
// walk a product's columns [n_begin, n_end): panels in chunks of ~128 KiB (L2) while every slice
// of x meets the chunk, each slice in tiles of MR rows x NP panels, the next chunk asked into L2
// meanwhile. The tiles are each kernel's own, over a kernel struct T:
//   static constexpr int kMaxRows;            // rows of x per tile
//   static constexpr int panels_for(int mr);  // panels per tile of mr rows
//   static constexpr int kMinChunkPanels;     // panels a chunk has at least
//   static constexpr int kNarrowRows;         // rows at a time over a chunk of one or two panels
//                                             // (0: such chunks go as any other)
//   template <int MR, int NP, typename W>
//   static void tile(a, xr, wp, m0, n0, n_begin, n_end, PanelPrefetch& pf);
//     y[m0 .. m0 + MR)[cols of panels p0 .. p0 + NP) that lie in [n_begin, n_end), over the
//     whole K; xr: MR row pointers; wp: panel p0's first k; pf.step() once per k.
// The including file defines TS_PANELS_TARGET (its kernel's target attribute, which the walk must
// carry for the tiles to be inlined) first. Everything here is in an anonymous namespace: one copy
// per including file, compiled for its instruction set.
#pragma once

#ifndef TS_PANELS_TARGET
#error \
    "define TS_PANELS_TARGET (the kernel's target attribute) before including gemm_panel_walk.hpp"
#endif

#include <xmmintrin.h>

#include <algorithm>
#include <cstdint>

#include "ops/gemm_nt.hpp"

namespace tessera::ops {
namespace {

// The next chunk of panels, asked into L2 while this one is computed (without it each chunk's
// first pass of x waits on W); for a range's last chunk, the start of the thread's next item
// (GemmNtArgs::prefetch_next). Panels of a whole K lie end to end, so a chunk is one block of
// bytes [next, end). Every tile asks for its share of the chunk's lines, spread over its whole K
// (`stride` bytes a k step, so a line is asked for up to 16 times: the repeats merge with the miss
// in flight): three registers in the tile's loop, which has few to spare. Asks in bursts take the
// line fill buffers the loads of W from L2 need, and so does more than one line a k step: on a
// Zen 3 a 64-sequence step of 50m takes 27.3-27.4 ms with the share spread over the tile's K,
// 28.7 with each tile asking for its share from its start, ~29.4 with the whole chunk asked for
// in the first pass of x (docs/perf.md "The panel walk's prefetch").
struct PanelPrefetch {
  const char* next = nullptr;
  const char* end = nullptr;       // the next chunk's end
  const char* tile_end = nullptr;  // this tile's share of it
  int64_t per_tile = 0;            // bytes of the next chunk asked for per tile
  int64_t stride = 64;             // bytes a k step moves on: a tile's share over its whole K

  __attribute__((always_inline)) void begin_tile() {
    tile_end = next + std::min(per_tile, end - next);
  }

  __attribute__((always_inline)) void step() {
    if (next < tile_end) {
      _mm_prefetch(next, _MM_HINT_T1);
      next += stride;
    }
  }
};

inline constexpr int64_t kPanel = kWeightPanelWidth;

// The last R (< NP) panels of a range in one tile of R: independent chains even for one row.
template <class T, int MR, int R, typename W>
TS_PANELS_TARGET inline void last_panels(const GemmNtArgs& a, const float* const* xr,
                                         const W* panels, int64_t p, int64_t r, int64_t m0,
                                         int64_t n_begin, int64_t n_end, PanelPrefetch& pf) {
  if constexpr (R > 0) {
    if (r == R) {
      pf.begin_tile();
      T::template tile<MR, R>(a, xr, panels + p * a.panel_stride, m0, p * kPanel, n_begin, n_end,
                              pf);
      return;
    }
    last_panels<T, MR, R - 1>(a, xr, panels, p, r, m0, n_begin, n_end, pf);
  }
}

// Every tile of MR rows from m0 over the panels holding [n_begin, n_end).
template <class T, int MR, typename W>
TS_PANELS_TARGET void rows_over_panels(const GemmNtArgs& a, const W* panels, int64_t m0,
                                       int64_t n_begin, int64_t n_end, PanelPrefetch& pf) {
  constexpr int NP = T::panels_for(MR);
  const float* xr[MR];
  for (int i = 0; i < MR; ++i) {
    xr[i] = a.x + (m0 + i) * a.ldx;
  }
  const int64_t p_begin = n_begin / kPanel, p_end = (n_end + kPanel - 1) / kPanel;
  int64_t p = p_begin;
  for (; p + NP <= p_end; p += NP) {
    pf.begin_tile();
    T::template tile<MR, NP>(a, xr, panels + p * a.panel_stride, m0, p * kPanel, n_begin, n_end,
                             pf);
  }
  last_panels<T, MR, NP - 1>(a, xr, panels, p, p_end - p, m0, n_begin, n_end, pf);
}

// rows_over_panels for mr (1..MR) rows.
template <class T, int MR, typename W>
TS_PANELS_TARGET void slice(const GemmNtArgs& a, const W* panels, int mr, int64_t m0,
                            int64_t n_begin, int64_t n_end, PanelPrefetch& pf) {
  if constexpr (MR > 1) {
    if (mr < MR) {
      slice<T, MR - 1>(a, panels, mr, m0, n_begin, n_end, pf);
      return;
    }
  }
  rows_over_panels<T, MR>(a, panels, m0, n_begin, n_end, pf);
}

// Rows of slice s of `rows` rows cut into `slices` slices of sizes differing by at most one: 13
// rows of 6-row tiles as 5 + 4 + 4, not 6 + 6 + 1. A one- or two-row slice reads its panels of W
// from L2 for few multiply-adds (a 1 x 6-panel tile loads 384 bytes of W per 12 FMAs, a 6 x 1
// tile 64), more than the L2 gives a cycle; the sizes do not change any output's FMA chain.
constexpr int64_t slice_rows(int64_t rows, int64_t slices, int64_t s) {
  return rows / slices + (s < rows % slices ? 1 : 0);
}

// Tiles of rows_over_panels over `panels` panels for the slices of `max_rows` rows of x the walk
// cuts.
template <class T>
constexpr int64_t tiles_over(int64_t rows, int64_t max_rows, int64_t panels) {
  if (max_rows != T::kMaxRows) {  // narrow slices: one tile each
    return (rows + max_rows - 1) / max_rows;
  }
  const int64_t slices = (rows + max_rows - 1) / max_rows;
  int64_t tiles = 0;
  for (int64_t s = 0; s < slices; ++s) {
    const int64_t np = T::panels_for(static_cast<int>(slice_rows(rows, slices, s)));
    tiles += (panels + np - 1) / np;
  }
  return tiles;
}

// Columns [n_begin, n_end) of y, over the whole K.
template <class T, typename W>
TS_PANELS_TARGET void walk_panels(const GemmNtArgs& a, const W* panels, int64_t n_begin,
                                  int64_t n_end) {
  n_begin += a.panel_col0;  // panel columns from here on
  n_end += a.panel_col0;
  constexpr auto kBytes = static_cast<int64_t>(sizeof(W));
  const int64_t panel_bytes = std::max<int64_t>(a.in, 1) * kPanel * kBytes;
  const int64_t chunk =
      std::max<int64_t>(T::kMinChunkPanels, kPanelChunkBytes / panel_bytes) * kPanel;  // cols
  for (int64_t first = n_begin / kPanel * kPanel; first < n_end; first += chunk) {
    const int64_t nc = std::max(n_begin, first), nc_end = std::min(n_end, first + chunk);
    PanelPrefetch pf;
    // With a single slice of x there is no second pass to hide the fetch behind; a part of K
    // (input_columns) leaves gaps between the panels. The last chunk of several slices asks for
    // the start of the thread's next item, where its caller named one (a one-slice product streams
    // W at the memory's pace: asking earlier gains nothing there).
    if (nc_end < n_end && a.rows > T::kMaxRows && a.panel_stride == a.in * kPanel) {
      pf.next = reinterpret_cast<const char*>(panels + nc_end / kPanel * a.panel_stride);
      const int64_t next_panels = (std::min(n_end, nc_end + chunk) - nc_end + kPanel - 1) / kPanel;
      pf.end = pf.next + next_panels * a.panel_stride * kBytes;
    } else if (nc_end >= n_end && a.rows > T::kMaxRows && a.prefetch_next != nullptr) {
      pf.next = a.prefetch_next;
      pf.end = pf.next + a.prefetch_next_bytes;
    }
    if (pf.next != nullptr) {
      const int64_t chunk_panels = (nc_end + kPanel - 1) / kPanel - nc / kPanel;
      const bool narrow = T::kNarrowRows > 0 && chunk_panels <= 2 && a.rows > T::kMaxRows;
      const int64_t tiles =
          tiles_over<T>(a.rows, narrow ? T::kNarrowRows : T::kMaxRows, chunk_panels);
      const int64_t lines = (pf.end - pf.next) / 64;
      pf.per_tile = (lines + tiles - 1) / std::max<int64_t>(tiles, 1) * 64;
      pf.stride = std::clamp<int64_t>((pf.per_tile + a.in - 1) / std::max<int64_t>(a.in, 1), 4, 64);
    }
    if constexpr (T::kNarrowRows > 0) {
      // One or two panels: slices of kNarrowRows rows (each over those panels in one tile).
      if ((nc_end + kPanel - 1) / kPanel - nc / kPanel <= 2 && a.rows > T::kMaxRows) {
        for (int64_t m0 = 0; m0 < a.rows; m0 += T::kNarrowRows) {
          slice<T, T::kNarrowRows>(a, panels,
                                   static_cast<int>(std::min<int64_t>(T::kNarrowRows, a.rows - m0)),
                                   m0, nc, nc_end, pf);
        }
        continue;
      }
    }
    const int64_t slices = (a.rows + T::kMaxRows - 1) / T::kMaxRows;
    for (int64_t s = 0, m0 = 0; s < slices; ++s) {
      const int64_t mr = slice_rows(a.rows, slices, s);
      slice<T, T::kMaxRows>(a, panels, static_cast<int>(mr), m0, nc, nc_end, pf);
      m0 += mr;
    }
  }
}

}  // namespace
}  // namespace tessera::ops
