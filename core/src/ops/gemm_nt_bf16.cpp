// The bf16-activation kernel of gemm_nt.hpp (model.dtype = "bf16"): x and W both bf16, multiplied
// on vdpbf16ps. Only functions marked TS_AVX512_BF16 use those instructions; callers check
// gemm_nt_bf16_available() first.
#include <algorithm>

#include "ops/gemm_nt.hpp"
#include "ops/gemm_nt_blocks.hpp"

namespace tessera::ops {
namespace gemm_detail {
namespace {

// 32 bf16 values: a whole step, or the step past the last whole one (zeros beyond K, memory there
// never touched).
struct WholeStep {
  TS_AVX512_BF16 static __m512bh load(const uint16_t* p, __mmask32 /*mask*/) {
    return (__m512bh)_mm512_loadu_si512(p);
  }
};
struct TailStep {
  TS_AVX512_BF16 static __m512bh load(const uint16_t* p, __mmask32 mask) {
    return (__m512bh)_mm512_maskz_loadu_epi16(mask, p);
  }
};

// acc[i][j] += x_i . w_j over the 32 k from k on, for the MR rows of the block; x loaded a row at
// a time (24 accumulators + 4 W leave room for one).
template <int MR, typename Step>
TS_AVX512_BF16 inline void dp_step(__m512 (&acc)[kRows][4], const uint16_t* const* xr,
                                   const uint16_t* const* wr, int64_t k, __mmask32 mask) {
  const __m512bh w0 = Step::load(wr[0] + k, mask), w1 = Step::load(wr[1] + k, mask);
  const __m512bh w2 = Step::load(wr[2] + k, mask), w3 = Step::load(wr[3] + k, mask);
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    const __m512bh xv = Step::load(xr[i] + k, mask);
    acc[i][0] = _mm512_dpbf16_ps(acc[i][0], xv, w0);
    acc[i][1] = _mm512_dpbf16_ps(acc[i][1], xv, w1);
    acc[i][2] = _mm512_dpbf16_ps(acc[i][2], xv, w2);
    acc[i][3] = _mm512_dpbf16_ps(acc[i][3], xv, w3);
  }
}

}  // namespace

// 32 k per step, acc[i][j] lane l accumulating x[2l] * w[2l] + x[2l + 1] * w[2l + 1] of each step
// (vdpbf16ps: exact bf16 products, fp32 sums, round to nearest even; Intel SDM "VDPBF16PS"), then
// the fp32 kernel's folds, so every output is still computed by the same operations wherever it
// sits (batch-invariant).
template <int MR>
TS_AVX512_BF16 inline BlockSums block_dp(const uint16_t* const* xr, const uint16_t* const* wr,
                                         int64_t K, const NextChunk& next) {
  __m512 acc[kRows][4];
  for (auto& row : acc) {
    for (auto& a : row) {
      a = _mm512_setzero_ps();
    }
  }
  constexpr int64_t kStep = int64_t{2} * kLanes;  // bf16 values per 64-byte load
  int64_t k = 0;
  int64_t hit = next.phase;
  for (int64_t step = 0; k + kStep <= K; k += kStep, ++step) {
    prefetch_step(next, step, hit, k * 2);
    dp_step<MR, WholeStep>(acc, xr, wr, k, 0);
  }
  if (k < K) {
    dp_step<MR, TailStep>(acc, xr, wr, k, static_cast<__mmask32>((1u << (K - k)) - 1u));
  }
  return fold_block<MR>(acc);
}

TS_AVX512_BF16 inline BlockSums block_dp_rows(int mr, const uint16_t* const* xr,
                                              const uint16_t* const* wr, int64_t K,
                                              const NextChunk& next) {
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

// gemm_nt_avx512.cpp's range loop (same tiling, same prefetch plan, same stores) for bf16 x and
// W, compiled for this kernel's target so that the blocks inline into it: with a call per 6x4
// block, 64 x 16384 x 512 takes 3739-3867 us on one thread and 1803-1831 on two, inlined
// 3555-3591 and 1715-1726 (tessera bench gemm, 3 runs each).
TS_AVX512_BF16 void gemm_nt_range_bf16(const GemmNtArgs& a, int64_t n_begin, int64_t n_end) {
  const int64_t K = std::max<int64_t>(a.in, 1);
  const int64_t n_chunk = cols_per_chunk_for(a.rows, K), m_chunk = rows_per_chunk(K);
  for (int64_t nc = n_begin; nc < n_end; nc += n_chunk) {
    const int64_t nc_end = std::min(n_end, nc + n_chunk);
    for (int64_t mc = 0; mc < a.rows; mc += m_chunk) {
      const int64_t mc_end = std::min(a.rows, mc + m_chunk);
      const int64_t passes = (mc_end - mc + kRows - 1) / kRows;
      for (int64_t m0 = mc; m0 < mc_end; m0 += kRows) {
        const int mr = static_cast<int>(std::min<int64_t>(kRows, mc_end - m0));
        const uint16_t* xr[kRows];
        for (int i = 0; i < kRows; ++i) {
          xr[i] = a.x_bf16 + (m0 + std::min(i, mr - 1)) * a.ldx;
        }
        for (int64_t n0 = nc; n0 < nc_end; n0 += kBlock) {
          const int nr = static_cast<int>(std::min(kBlock, nc_end - n0));
          const uint16_t* wr[4];
          for (int j = 0; j < 4; ++j) {
            wr[j] = a.w_bf16 + (n0 + std::min(j, nr - 1)) * a.ldw;
          }
          const NextChunk next = next_chunk_for(a, a.w_bf16, n0, n_end, n_chunk, (m0 - mc) / kRows,
                                                passes, mc_end == a.rows);
          store_block(block_dp_rows(mr, xr, wr, a.in, next), a.y, a.ldy, m0, mr, n0, nr);
        }
      }
    }
  }
}

}  // namespace gemm_detail

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
    for (; k + gemm_detail::kLanes <= in; k += gemm_detail::kLanes) {
      const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + k));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), (__m256i)h);
    }
    if (k < in) {
      const auto mask = static_cast<__mmask16>((1u << (in - k)) - 1u);
      alignas(32) uint16_t tmp[gemm_detail::kLanes];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp),
                         (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, src + k)));
      std::copy_n(tmp, in - k, dst + k);
    }
  }
}

}  // namespace tessera::ops
