// The bf16-activation kernel of gemm_nt.hpp (model.dtype = "bf16"): x and W both bf16, multiplied
// on vdpbf16ps. Only functions marked TS_AVX512_BF16 use those instructions; callers check
// gemm_nt_bf16_available() first.
#include <algorithm>

#include "ops/gemm_nt.hpp"
#include "ops/gemm_nt_blocks.hpp"

namespace tessera::ops {
namespace gemm_detail {
namespace {

TS_AVX512_BF16 inline __m512bh load_bf16(const uint16_t* p) {
  return (__m512bh)_mm512_loadu_si512(p);
}
TS_AVX512_BF16 inline __m512bh load_bf16_tail(__mmask32 mask, const uint16_t* p) {
  return (__m512bh)_mm512_maskz_loadu_epi16(mask, p);
}

}  // namespace

// 32 k per step, acc[i][j] lane l accumulating x[2l] * w[2l] + x[2l + 1] * w[2l + 1] of each step
// (vdpbf16ps: exact bf16 products, fp32 sums, round to nearest even; Intel SDM "VDPBF16PS"), then
// the fp32 kernel's folds, so every output is still computed by the same operations wherever it
// sits (batch-invariant). Called, not inlined, from the range loop, whose target lacks BF16.
template <int MR>
TS_AVX512_BF16 BlockSums block_dp(const uint16_t* const* xr, const uint16_t* const* wr, int64_t K,
                                  const NextChunk& next) {
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
  return fold_block<MR>(acc);
}

template BlockSums block_dp<1>(const uint16_t* const*, const uint16_t* const*, int64_t,
                               const NextChunk&);
template BlockSums block_dp<2>(const uint16_t* const*, const uint16_t* const*, int64_t,
                               const NextChunk&);
template BlockSums block_dp<3>(const uint16_t* const*, const uint16_t* const*, int64_t,
                               const NextChunk&);
template BlockSums block_dp<4>(const uint16_t* const*, const uint16_t* const*, int64_t,
                               const NextChunk&);
template BlockSums block_dp<5>(const uint16_t* const*, const uint16_t* const*, int64_t,
                               const NextChunk&);
template BlockSums block_dp<6>(const uint16_t* const*, const uint16_t* const*, int64_t,
                               const NextChunk&);

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
