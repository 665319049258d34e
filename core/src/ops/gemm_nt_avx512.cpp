// The AVX-512 body of gemm_nt.hpp. Only functions marked TS_AVX512 use AVX-512 instructions (the
// file is compiled for the baseline ISA), so nothing AVX-512 can leak into shared inline code
// and the binary still runs on CPUs without it; callers check gemm_nt_avx512_available() first.
#include <algorithm>

#include "ops/gemm_nt.hpp"
#include "ops/gemm_nt_blocks.hpp"

namespace tessera::ops {
namespace {

using namespace gemm_detail;  // NOLINT(google-build-using-namespace): this file's own helpers

// The tail of a row of W (count < 16 values; load_w reads whole vectors).
TS_AVX512 inline __m512 load_w_tail(__mmask16 mask, int64_t /*count*/, const float* p) {
  return _mm512_maskz_loadu_ps(mask, p);
}
TS_AVX512 inline __m512 load_w_tail(__mmask16 /*mask*/, int64_t count, const uint16_t* p) {
  alignas(32) uint16_t tmp[kLanes] = {};
  std::copy_n(p, count, tmp);
  return load_w(tmp);
}

// One block: MR (1..6) rows of x times 4 rows of w over the whole K. Rows beyond MR get zero
// accumulators, which changes nothing in the folds of the real rows.
// 6 x 4 keeps 24 of the 32 vector registers as accumulators: per 16 k, 4 loads of W (from L2) and
// 6 of x (from L1) feed 24 FMAs, so L2 delivers 256 bytes per 12 FMA cycles.
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
  int64_t hit = next.phase;
  for (int64_t step = 0; k + kLanes <= K; k += kLanes, ++step) {
    prefetch_step(next, step, hit, k * static_cast<int64_t>(sizeof(W)));
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
  return fold_block<MR>(acc);
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

int64_t gemm_nt_cols_per_chunk(int64_t rows, int64_t in) {
  return cols_per_chunk_for(rows, std::max<int64_t>(in, 1));
}

bool gemm_nt_avx512_available() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  return ok;
}

namespace {

// fp32 x (bf16 x: gemm_nt_range_bf16 in gemm_nt_bf16.cpp, the same loops).
template <typename W>
TS_AVX512 void gemm_nt_range(const GemmNtArgs& a, const W* w, int64_t n_begin, int64_t n_end) {
  const int64_t K = std::max<int64_t>(a.in, 1);
  const int64_t n_chunk = cols_per_chunk_for(a.rows, K), m_chunk = rows_per_chunk(K);
  for (int64_t nc = n_begin; nc < n_end; nc += n_chunk) {
    const int64_t nc_end = std::min(n_end, nc + n_chunk);
    for (int64_t mc = 0; mc < a.rows; mc += m_chunk) {
      const int64_t mc_end = std::min(a.rows, mc + m_chunk);
      const int64_t passes = (mc_end - mc + kRows - 1) / kRows;
      const bool last_x_chunk = mc_end == a.rows;  // the next chunk of W is needed right after
      for (int64_t m0 = mc; m0 < mc_end; m0 += kRows) {
        const int mr = static_cast<int>(std::min<int64_t>(kRows, mc_end - m0));
        const float* xr[kRows];
        for (int i = 0; i < kRows; ++i) {
          xr[i] = a.x + (m0 + std::min(i, mr - 1)) * a.ldx;
        }
        for (int64_t n0 = nc; n0 < nc_end; n0 += kBlock) {
          const int nr = static_cast<int>(std::min(kBlock, nc_end - n0));
          const W* wr[4];  // a short last block repeats its last row; those sums are dropped
          for (int j = 0; j < 4; ++j) {
            wr[j] = w + (n0 + std::min(j, nr - 1)) * a.ldw;
          }
          const NextChunk next =
              next_chunk_for(a, w, n0, n_end, n_chunk, (m0 - mc) / kRows, passes, last_x_chunk);
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
    if (gemm_nt_amx_available()) {
      gemm_nt_range_amx(a, n_begin, n_end);
    } else {
      gemm_nt_range_bf16(a, n_begin, n_end);
    }
  } else if (a.in_panels()) {
    gemm_nt_range_panels(a, n_begin, n_end);
  } else if (a.w_bf16 != nullptr) {
    gemm_nt_range(a, a.w_bf16, n_begin, n_end);
  } else {
    gemm_nt_range(a, a.w, n_begin, n_end);
  }
}

}  // namespace tessera::ops
