// Internal to the GEMM kernels (gemm_nt_avx512.cpp, gemm_nt_bf16.cpp): the register blocking
// the AVX-512 ones share — constants, the fixed folds that sum an accumulator block's lanes, and
// the prefetch of the next chunk of W. Functions carry their own target attributes (the files are
// compiled for the baseline ISA), so nothing here runs unless a caller checked the CPU.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "ops/gemm_nt.hpp"

#define TS_AVX512 __attribute__((target("avx512f,avx512dq")))
// The bf16-activation kernel also needs vdpbf16ps (AVX512_BF16) and 16-bit masked loads (BW).
#define TS_AVX512_BF16 __attribute__((target("avx512f,avx512dq,avx512bw,avx512bf16")))
// The AMX kernel (gemm_nt_amx.cpp): tiles, TDPBF16PS, and AVX-512 BW for its packing.
#define TS_AMX __attribute__((target("avx512f,avx512dq,avx512bw,amx-tile,amx-bf16")))
// The AVX2 kernels (gemm_nt_avx2.cpp, gemm_nt_panels_avx2.cpp).
#define TS_AVX2 __attribute__((target("avx2,fma")))

namespace tessera::ops::gemm_detail {

inline constexpr int kLanes = 16;

// 16 weights as fp32: loaded, or widened from bf16 (its bits are the top half of an fp32's, so
// the widening is exact and the products are those of fp32 weights). Both fp32-x kernels.
TS_AVX512 inline __m512 load_w(const float* p) { return _mm512_loadu_ps(p); }
TS_AVX512 inline __m512 load_w(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
// The same for 8 weights on AVX2 (gemm_nt_avx2.cpp, gemm_nt_panels_avx2.cpp,
// gemm_nt_few_columns_avx2.cpp).
TS_AVX2 inline __m256 load_w8(const float* p) { return _mm256_loadu_ps(p); }
TS_AVX2 inline __m256 load_w8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline constexpr int64_t kBlock = 4;               // columns (W rows) per block
inline constexpr int kRows = kGemmNtRowsPerBlock;  // 6 x 4 outputs, 24 accumulators

// Per 128-bit lane: [sum pairs of a, of b, of c, of d] -> 4 lanes of [a b c d] partial sums.
// Each input is treated the same: (e0 + e2) + (e1 + e3) within every 128-bit lane.
TS_AVX512 inline __m512 fold4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  // shuffle 0x44 -> [ab0 ab1 cd0 cd1], 0xEE -> [ab2 ab3 cd2 cd3] in each 128-bit lane
  return _mm512_add_ps(_mm512_shuffle_ps(ab, cd, 0x44), _mm512_shuffle_ps(ab, cd, 0xEE));
}

// v0..v3 hold 4 lanes L0..L3 of 4 partial sums each; returns [v0, v1, v2, v3] each summed over
// its lanes as (L0 + L2) + (L1 + L3).
TS_AVX512 inline __m512 fold_lanes(__m512 v0, __m512 v1, __m512 v2, __m512 v3) {
  const __m512 w01 =
      _mm512_add_ps(_mm512_shuffle_f32x4(v0, v1, 0x44),   // [v0.L0 v0.L1 v1.L0 v1.L1]
                    _mm512_shuffle_f32x4(v0, v1, 0xEE));  // [v0.L2 v0.L3 v1.L2 v1.L3]
  const __m512 w23 =
      _mm512_add_ps(_mm512_shuffle_f32x4(v2, v3, 0x44), _mm512_shuffle_f32x4(v2, v3, 0xEE));
  return _mm512_add_ps(_mm512_shuffle_f32x4(w01, w23, 0x88),   // [w01.L0 w01.L2 w23.L0 w23.L2]
                       _mm512_shuffle_f32x4(w01, w23, 0xDD));  // [w01.L1 w01.L3 w23.L1 w23.L3]
}

// A block's sums: MR (1..6) rows of x times 4 rows of w, as lo = [row0: n0..n3, row1, row2,
// row3] and hi = [row4, row5, -, -].
struct BlockSums {
  __m512 lo, hi;
};

// Prefetch of the next chunk of W into L2 while this one is computed, spread over the passes of
// x: in pass `phase` of `period`, every period-th 16-float step also prefetches the 4 rows at pf
// (ldw apart). Without it the first pass over each chunk stalls on memory (measured: a cold
// 16-row GEMM cost hot time + W at ~17 GB/s, i.e. no overlap at all).
struct NextChunk {
  const char* rows = nullptr;  // nullptr: nothing to prefetch
  int64_t ldw = 0;             // bytes
  int64_t phase = 0, period = 1;
  // Decode (one pass over W): into L1, since each line is used once and soon. The bf16-activation
  // kernel, which takes a whole line of each W row per step, streams 1 x 16384 x 512 from memory
  // in 427-493 us on one thread with W asked into L1, 623-655 into L2; 186-224 against 282-310 on
  // two (3 interleaved runs of tessera bench gemm); the fp32 kernels' rows take the same time
  // either way, within the noise. Otherwise into L2, where the chunk stays for the passes of x.
  bool into_l1 = false;
};

TS_AVX512 inline void prefetch(const NextChunk& next, const char* p) {
  if (next.into_l1) {
    _mm_prefetch(p, _MM_HINT_T0);
  } else {
    _mm_prefetch(p, _MM_HINT_T1);
  }
}

// At every period-th step from `phase` (tracked in `hit`, which starts at next.phase: no division
// per step), the 4 rows of the next chunk at `offset` bytes.
TS_AVX512 inline void prefetch_step(const NextChunk& next, int64_t step, int64_t& hit,
                                    int64_t offset) {
  if (next.rows == nullptr || step != hit) {
    return;
  }
  hit += next.period;
  for (int j = 0; j < 4; ++j) {
    prefetch(next, next.rows + j * next.ldw + offset);
  }
}

// acc[i][j] (rows i < MR, 4 columns j) folded into the block's sums; rows beyond MR give zeros.
template <int MR>
TS_AVX512 inline BlockSums fold_block(const __m512 (&acc)[kRows][4]) {
  __m512 rows[kRows];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    rows[i] = fold4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
  }
  const __m512 zero = _mm512_setzero_ps();
  for (int i = MR; i < kRows; ++i) {
    rows[i] = zero;
  }
  BlockSums out{fold_lanes(rows[0], rows[1], rows[2], rows[3]), zero};
  if constexpr (MR > 4) {
    out.hi = fold_lanes(rows[4], rows[5], zero, zero);
  }
  return out;
}

TS_AVX512 inline void store4(__m512 sums, float* y, int64_t ldy, int rows, int nr) {
  if (nr == 4) {
    for (int i = 0; i < rows; ++i) {
      const __m128 v = i == 0   ? _mm512_castps512_ps128(sums)
                       : i == 1 ? _mm512_extractf32x4_ps(sums, 1)
                       : i == 2 ? _mm512_extractf32x4_ps(sums, 2)
                                : _mm512_extractf32x4_ps(sums, 3);
      _mm_storeu_ps(y + i * ldy, v);
    }
    return;
  }
  alignas(64) float tmp[kLanes];
  _mm512_store_ps(tmp, sums);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < nr; ++j) {
      y[i * ldy + j] = tmp[i * 4 + j];
    }
  }
}

TS_AVX512 inline void store_block(const BlockSums& sums, float* y, int64_t ldy, int64_t m0, int mr,
                                  int64_t n0, int nr) {
  float* dst = y + m0 * ldy + n0;
  store4(sums.lo, dst, ldy, std::min(mr, 4), nr);
  if (mr > 4) {
    store4(sums.hi, dst + 4 * ldy, ldy, mr - 4, nr);
  }
}

// Loop tiling (per thread): a chunk of W (cols_per_chunk rows of W) stays in L1/L2 while every
// 6-row slice of x meets all of it; x itself is taken rows_per_chunk rows at a time (~256 KiB,
// L2). Results are written a row segment at a time, never 4 KiB-strided columns. With many rows
// a chunk is ~128 KiB (L2, reused by many passes); with few it is ~32 KiB, so the next chunk's
// prefetch (NextChunk) starts early and the first, unprefetched one costs little.
inline int64_t cols_per_chunk_for(int64_t rows, int64_t K) {
  const int64_t budget = int64_t{1024} * (rows > 32 ? 128 : 32);
  const int64_t cols = budget / (K * static_cast<int64_t>(sizeof(float)));
  return std::clamp<int64_t>(cols / kBlock * kBlock, kBlock, 1024);
}

inline int64_t rows_per_chunk(int64_t K) {
  constexpr int64_t kL2BudgetX = int64_t{256} * 1024;
  const int64_t rows = kL2BudgetX / (K * static_cast<int64_t>(sizeof(float)));
  return std::clamp<int64_t>(rows / kRows * kRows, kRows, 252);
}

// With a single pass over W (at most 6 rows: decode), W rows this far ahead are prefetched as the
// kernel goes: 1 x 16384 x 512 from memory on one thread at 26.5-30.4 GB/s, 22.6-23.3 without
// (16-64 rows ahead all alike; tessera bench gemm).
inline constexpr int64_t kSinglePassAhead = 16;

// What block (m0, n0) of a range [.., n_end) prefetches: with one pass over W (decode rows), the
// W rows kSinglePassAhead ahead, into L1; with several, the next chunk, spread over the passes.
template <typename W>
inline NextChunk next_chunk_for(const GemmNtArgs& a, const W* w, int64_t n0, int64_t n_end,
                                int64_t n_chunk, int64_t pass, int64_t passes, bool last_x_chunk) {
  NextChunk next;
  const auto w_bytes = static_cast<int64_t>(sizeof(W));
  if (passes == 1 && n0 + kSinglePassAhead < n_end) {
    next.rows =
        reinterpret_cast<const char*>(w + std::min(n0 + kSinglePassAhead, n_end - 4) * a.ldw);
    next.ldw = a.ldw * w_bytes;
    next.into_l1 = true;
  } else if (passes > 1 && last_x_chunk && n0 + n_chunk < n_end) {
    next.rows = reinterpret_cast<const char*>(w + std::min(n0 + n_chunk, n_end - 4) * a.ldw);
    next.ldw = a.ldw * w_bytes;
    next.phase = pass;
    next.period = passes;
  }
  return next;
}

// Columns [n_begin, n_end) of a product with bf16 x and W (gemm_nt_bf16.cpp; requires
// gemm_nt_bf16_available()).
TS_AVX512_BF16 void gemm_nt_range_bf16(const GemmNtArgs& a, int64_t n_begin, int64_t n_end);

// Columns [n_begin, n_end) of a product with fp32 x and W in panels (gemm_nt_panels.cpp).
TS_AVX512 void gemm_nt_range_panels(const GemmNtArgs& a, int64_t n_begin, int64_t n_end);

// Columns [n_begin, n_end) of a product with fp32 x and W in panels on AVX2 + FMA
// (gemm_nt_panels_avx2.cpp; the AVX-512 panel kernel's bits).
TS_AVX2 void gemm_nt_range_panels_avx2(const GemmNtArgs& a, int64_t n_begin, int64_t n_end);

// Products of at most 24 columns from a vector boundary of the panels, over rows of x at least
// kFewColumnsMinRows (the mHC mix, 24 x 2048): every column in one tile, K in L1-sized blocks
// (gemm_nt_few_columns_avx2.cpp; the panel walk's bits). Fewer rows stream W at the memory's pace
// whatever the tile.
inline constexpr int64_t kFewColumnsMinRows = 4;
bool few_columns_avx2_takes(const GemmNtArgs& a, int64_t n_begin, int64_t n_end);
TS_AVX2 void gemm_nt_few_columns_avx2(const GemmNtArgs& a, int64_t n_begin, int64_t n_end);

// The same columns on AMX tiles (gemm_nt_amx.cpp; requires gemm_nt_amx_available()).
TS_AMX void gemm_nt_range_amx(const GemmNtArgs& a, int64_t n_begin, int64_t n_end);

}  // namespace tessera::ops::gemm_detail
