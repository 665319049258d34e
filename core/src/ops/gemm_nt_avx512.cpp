// The AVX-512 body of gemm_nt.hpp. Only functions marked TS_AVX512 use AVX-512 instructions (the
// file is compiled for the baseline ISA), so nothing AVX-512 can leak into shared inline code
// and the binary still runs on CPUs without it; callers check gemm_nt_avx512_available() first.
#include <immintrin.h>

#include <algorithm>

#include "ops/gemm_nt.hpp"

#define TS_AVX512 __attribute__((target("avx512f,avx512dq")))
// The bf16-activation kernel also needs vdpbf16ps (AVX512_BF16) and 16-bit masked loads (BW).
#define TS_AVX512_BF16 __attribute__((target("avx512f,avx512dq,avx512bw,avx512bf16")))

namespace tessera::ops {
namespace {

constexpr int kLanes = 16;
constexpr int64_t kBlock = 4;  // columns (W rows) per block
constexpr int kRows = 6;       // x rows per block: 6 x 4 outputs, 24 accumulators

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

// One block: MR (1..6) rows of x times 4 rows of w over the whole K. Rows beyond MR get zero
// accumulators, which changes nothing in the folds of the real rows. Returns the sums as
// lo = [row0: n0..n3, row1, row2, row3] and hi = [row4, row5, -, -].
// 6 x 4 keeps 24 of the 32 vector registers as accumulators: per 16 k, 4 loads of W (from L2) and
// 6 of x (from L1) feed 24 FMAs, so L2 delivers 256 bytes per 12 FMA cycles.
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
  // kernel, which takes a whole line of each W row per step, streamed 1 x 16384 x 512 from memory
  // in 623-655 -> 427-493 us on one thread, 282-310 -> 186-224 on two (3 interleaved runs of
  // tessera bench gemm); the fp32 kernels' rows moved within the noise. Otherwise into L2, where
  // the chunk stays for the passes of x.
  bool into_l1 = false;
};

TS_AVX512 inline void prefetch(const NextChunk& next, const char* p) {
  if (next.into_l1) {
    _mm_prefetch(p, _MM_HINT_T0);
  } else {
    _mm_prefetch(p, _MM_HINT_T1);
  }
}

// 16 weights as fp32: loaded, or widened from bf16 (its bits are the top half of an fp32's, so
// the widening is exact and the products are those of the fp32 kernel).
TS_AVX512 inline __m512 load_w(const float* p) { return _mm512_loadu_ps(p); }
TS_AVX512 inline __m512 load_w(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
TS_AVX512 inline __m512 load_w_tail(__mmask16 mask, int64_t /*count*/, const float* p) {
  return _mm512_maskz_loadu_ps(mask, p);
}
TS_AVX512 inline __m512 load_w_tail(__mmask16 /*mask*/, int64_t count, const uint16_t* p) {
  alignas(32) uint16_t tmp[kLanes] = {};
  std::copy_n(p, count, tmp);
  return load_w(tmp);
}

template <int MR, typename W>
TS_AVX512 inline BlockSums block(const float* const* xr, const W* const* wr, int64_t K,
                                 const NextChunk& next) {
  __m512 acc[kRows][4];
#pragma GCC unroll 6
  for (auto& row : acc) {
    for (auto& a : row) {
      a = _mm512_setzero_ps();
    }
  }
  int64_t k = 0;
  for (int64_t step = 0; k + kLanes <= K; k += kLanes, ++step) {
    if (next.rows != nullptr && step % next.period == next.phase) {
      for (int j = 0; j < 4; ++j) {
        prefetch(next, next.rows + j * next.ldw + k * static_cast<int64_t>(sizeof(W)));
      }
    }
    const __m512 w0 = load_w(wr[0] + k), w1 = load_w(wr[1] + k);
    const __m512 w2 = load_w(wr[2] + k), w3 = load_w(wr[3] + k);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_loadu_ps(xr[i] + k);
      acc[i][0] = _mm512_fmadd_ps(xv, w0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(xv, w1, acc[i][1]);
      acc[i][2] = _mm512_fmadd_ps(xv, w2, acc[i][2]);
      acc[i][3] = _mm512_fmadd_ps(xv, w3, acc[i][3]);
    }
  }
  if (k < K) {  // the tail: masked loads read zeros past K (and never touch memory there)
    const auto mask = static_cast<__mmask16>((1u << (K - k)) - 1u);
    const __m512 w0 = load_w_tail(mask, K - k, wr[0] + k);
    const __m512 w1 = load_w_tail(mask, K - k, wr[1] + k);
    const __m512 w2 = load_w_tail(mask, K - k, wr[2] + k);
    const __m512 w3 = load_w_tail(mask, K - k, wr[3] + k);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, xr[i] + k);
      acc[i][0] = _mm512_fmadd_ps(xv, w0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(xv, w1, acc[i][1]);
      acc[i][2] = _mm512_fmadd_ps(xv, w2, acc[i][2]);
      acc[i][3] = _mm512_fmadd_ps(xv, w3, acc[i][3]);
    }
  }
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

// The bf16-activation block: x and W both bf16, 32 k per step, acc[i][j] lane l accumulating
// x[2l] * w[2l] + x[2l + 1] * w[2l + 1] of each 32-k step (vdpbf16ps: exact bf16 products,
// fp32 sums, round to nearest even; Intel SDM "VDPBF16PS"). Then the fp32 kernel's folds, so
// every output is still computed by the same operations wherever it sits (batch-invariant).
// Not inlined: it is called from the fp32 range loop, whose target lacks AVX512_BF16.
TS_AVX512_BF16 inline __m512bh load_bf16(const uint16_t* p) {
  return (__m512bh)_mm512_loadu_si512(p);
}
TS_AVX512_BF16 inline __m512bh load_bf16_tail(__mmask32 mask, const uint16_t* p) {
  return (__m512bh)_mm512_maskz_loadu_epi16(mask, p);
}

template <int MR>
TS_AVX512_BF16 BlockSums block_dp(const uint16_t* const* xr, const uint16_t* const* wr, int64_t K,
                                  const NextChunk& next) {
  __m512 acc[kRows][4];
  for (auto& row : acc) {
    for (auto& a : row) {
      a = _mm512_setzero_ps();
    }
  }
  int64_t k = 0;
  for (int64_t step = 0; k + 2 * kLanes <= K; k += 2 * kLanes, ++step) {
    if (next.rows != nullptr && step % next.period == next.phase) {
      for (int j = 0; j < 4; ++j) {
        prefetch(next, next.rows + j * next.ldw + k * 2);
      }
    }
    const __m512bh w0 = load_bf16(wr[0] + k), w1 = load_bf16(wr[1] + k);
    const __m512bh w2 = load_bf16(wr[2] + k), w3 = load_bf16(wr[3] + k);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m512bh xv = load_bf16(xr[i] + k);
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], xv, w0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], xv, w1);
      acc[i][2] = _mm512_dpbf16_ps(acc[i][2], xv, w2);
      acc[i][3] = _mm512_dpbf16_ps(acc[i][3], xv, w3);
    }
  }
  if (k < K) {  // the tail: masked loads read zeros past K (and never touch memory there)
    const auto mask = static_cast<__mmask32>((1u << (K - k)) - 1u);
    const __m512bh w0 = load_bf16_tail(mask, wr[0] + k), w1 = load_bf16_tail(mask, wr[1] + k);
    const __m512bh w2 = load_bf16_tail(mask, wr[2] + k), w3 = load_bf16_tail(mask, wr[3] + k);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m512bh xv = load_bf16_tail(mask, xr[i] + k);
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], xv, w0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], xv, w1);
      acc[i][2] = _mm512_dpbf16_ps(acc[i][2], xv, w2);
      acc[i][3] = _mm512_dpbf16_ps(acc[i][3], xv, w3);
    }
  }
  __m512 rows[kRows];
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

TS_AVX512 void store_block(const BlockSums& sums, float* y, int64_t ldy, int64_t m0, int mr,
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
int64_t cols_per_chunk_for(int64_t rows, int64_t K) {
  const int64_t budget = int64_t{1024} * (rows > 32 ? 128 : 32);
  const int64_t cols = budget / (K * static_cast<int64_t>(sizeof(float)));
  return std::clamp<int64_t>(cols / kBlock * kBlock, kBlock, 1024);
}

int64_t rows_per_chunk(int64_t K) {
  constexpr int64_t kL2BudgetX = int64_t{256} * 1024;
  const int64_t rows = kL2BudgetX / (K * static_cast<int64_t>(sizeof(float)));
  return std::clamp<int64_t>(rows / kRows * kRows, kRows, 252);
}

template <typename W>
TS_AVX512 inline BlockSums block_rows(int mr, const uint16_t* const* xr, const W* const* wr,
                                      int64_t K, const NextChunk& next) {
  switch (mr) {
    case 6:
      return block_dp<6>(xr, wr, K, next);
    case 5:
      return block_dp<5>(xr, wr, K, next);
    case 4:
      return block_dp<4>(xr, wr, K, next);
    case 3:
      return block_dp<3>(xr, wr, K, next);
    case 2:
      return block_dp<2>(xr, wr, K, next);
    default:
      return block_dp<1>(xr, wr, K, next);
  }
}

template <typename W>
TS_AVX512 inline BlockSums block_rows(int mr, const float* const* xr, const W* const* wr, int64_t K,
                                      const NextChunk& next) {
  switch (mr) {
    case 6:
      return block<6>(xr, wr, K, next);
    case 5:
      return block<5>(xr, wr, K, next);
    case 4:
      return block<4>(xr, wr, K, next);
    case 3:
      return block<3>(xr, wr, K, next);
    case 2:
      return block<2>(xr, wr, K, next);
    default:
      return block<1>(xr, wr, K, next);
  }
}

}  // namespace

int64_t gemm_nt_avx512_cols_per_chunk(int64_t rows, int64_t in) {
  return cols_per_chunk_for(rows, std::max<int64_t>(in, 1));
}

bool gemm_nt_bf16_available() {
  static const bool ok = gemm_nt_avx512_available() && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512bf16");
  return ok;
}

// Round to nearest even (vcvtneps2bf16), 16 values at a time; the tail through a masked load.
TS_AVX512_BF16 void round_rows_to_bf16(const float* x, int64_t rows, int64_t in, int64_t ldx,
                                       uint16_t* out) {
  for (int64_t m = 0; m < rows; ++m) {
    const float* src = x + m * ldx;
    uint16_t* dst = out + m * in;
    int64_t k = 0;
    for (; k + kLanes <= in; k += kLanes) {
      const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + k));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), (__m256i)h);
    }
    if (k < in) {
      const auto mask = static_cast<__mmask16>((1u << (in - k)) - 1u);
      alignas(32) uint16_t tmp[kLanes];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp),
                         (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, src + k)));
      std::copy_n(tmp, in - k, dst + k);
    }
  }
}

bool gemm_nt_avx512_available() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  return ok;
}

// With a single pass over W (at most 6 rows: decode), W rows this far ahead are prefetched as the
// kernel goes: 1 x 16384 x 512 from memory on one thread 22.6-23.3 -> 26.5-30.4 GB/s (16-64 rows
// ahead all alike; tessera bench gemm).
constexpr int64_t kSinglePassAhead = 16;

namespace {

// X: float, or uint16_t for bf16 activations (then W is bf16 too, and ldx counts bf16s).
template <typename X, typename W>
TS_AVX512 void gemm_nt_range(const GemmNtArgs& a, const X* x, const W* w, int64_t n_begin,
                             int64_t n_end) {
  const int64_t K = std::max<int64_t>(a.in, 1);
  const auto w_bytes = static_cast<int64_t>(sizeof(W));
  const int64_t n_chunk = cols_per_chunk_for(a.rows, K), m_chunk = rows_per_chunk(K);
  for (int64_t nc = n_begin; nc < n_end; nc += n_chunk) {
    const int64_t nc_end = std::min(n_end, nc + n_chunk);
    for (int64_t mc = 0; mc < a.rows; mc += m_chunk) {
      const int64_t mc_end = std::min(a.rows, mc + m_chunk);
      const int64_t passes = (mc_end - mc + kRows - 1) / kRows;
      const bool last_x_chunk = mc_end == a.rows;  // the next chunk of W is needed right after
      for (int64_t m0 = mc; m0 < mc_end; m0 += kRows) {
        const int mr = static_cast<int>(std::min<int64_t>(kRows, mc_end - m0));
        const X* xr[kRows];
        for (int i = 0; i < kRows; ++i) {
          xr[i] = x + (m0 + std::min(i, mr - 1)) * a.ldx;
        }
        for (int64_t n0 = nc; n0 < nc_end; n0 += kBlock) {
          const int nr = static_cast<int>(std::min(kBlock, nc_end - n0));
          const W* wr[4];  // a short last block repeats its last row; those sums are dropped
          for (int j = 0; j < 4; ++j) {
            wr[j] = w + (n0 + std::min(j, nr - 1)) * a.ldw;
          }
          NextChunk next;
          if (passes == 1 && n0 + kSinglePassAhead < n_end) {  // decode rows: stream ahead
            next.rows = reinterpret_cast<const char*>(
                w + std::min(n0 + kSinglePassAhead, n_end - 4) * a.ldw);
            next.ldw = a.ldw * w_bytes;
            next.into_l1 = true;
          } else if (passes > 1 && last_x_chunk && n0 + n_chunk < n_end) {
            next.rows =
                reinterpret_cast<const char*>(w + std::min(n0 + n_chunk, n_end - 4) * a.ldw);
            next.ldw = a.ldw * w_bytes;
            next.phase = (m0 - mc) / kRows;
            next.period = passes;
          }
          const BlockSums sums = block_rows(mr, xr, wr, a.in, next);
          store_block(sums, a.y, a.ldy, m0, mr, n0, nr);
        }
      }
    }
  }
}

}  // namespace

TS_AVX512 void gemm_nt_avx512(const GemmNtArgs& a, int64_t n_begin, int64_t n_end) {
  if (a.x_bf16 != nullptr) {
    gemm_nt_range(a, a.x_bf16, a.w_bf16, n_begin, n_end);
  } else if (a.w_bf16 != nullptr) {
    gemm_nt_range(a, a.x, a.w_bf16, n_begin, n_end);
  } else {
    gemm_nt_range(a, a.x, a.w, n_begin, n_end);
  }
}

}  // namespace tessera::ops
