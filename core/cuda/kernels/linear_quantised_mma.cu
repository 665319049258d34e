// y = x . W^T for the checkpoint's quantised weights on tensor cores (mma.sync m16n8k16 bf16,
// fp32 sums), for prefill-shaped products (many rows); linear_fp8.cu holds the decode-shaped
// kernels and the definition. The products are the same W8A8 ones: x quantised to e4m3 per 1x128
// block with a power-of-two scale (number_formats.cuh), W in e4m3 (one UE8M0 scale per 128x128
// block) or e2m1 (one UE8M0 scale per 32 inputs). e4m3 and e2m1 values, and e2m1 values times a
// power of two, are exact in bf16, so the tensor cores multiply exactly the quantised values
// (as DeepSeek's FP8 GEMMs do on FP8 tensor cores) and sum them in fp32; each 128-input block's
// sum is scaled by its scales and added to the total in fp32, as DeepGEMM promotes its partial
// sums. Only the summation order within a block differs from the decode kernel.
//
// Tiles: a block of 4 warps computes a 64 x 64 tile of y (rows x outputs); per 128-input block,
// each warp quantises 16 rows of x and decodes 16 rows of W into shared memory as bf16 (rows of
// 136 values: 272 bytes, so the 8 rows an ldmatrix reads fall in different banks), then each warp
// multiplies its 16 rows by the 64 outputs: 8 k-steps x 8 n-tiles of mma.
#include "device_primitives.cuh"
#include "mma_tile.cuh"
#include "number_formats.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;
using namespace formats;

constexpr int kThreads = 128;
constexpr int kTileRows = 64, kTileCols = 64, kBlock = 128;
constexpr int kStride = kBlock + 8;  // bf16 per shared row
constexpr size_t kSharedBytes =
    2 * kTileRows * kStride * sizeof(uint16_t) + kTileRows * sizeof(float);

// Row r of x's block kb quantised into sx (bf16 of the e4m3 values); the row's scale into xs.
TS_DEVICE void quantise_row(const float* x, int64_t rows, int64_t in, int64_t row, int64_t kb,
                            int lane, uint16_t* sx_row, float* xs) {
  float v[4];
  float amax = 0.0f;
  for (int j = 0; j < 4; ++j) {
    const int64_t i = kb * kBlock + lane * 4 + j;
    v[j] = row < rows && i < in ? x[row * in + i] : 0.0f;
    amax = fmaxf(amax, fabsf(v[j]));
  }
  for (int mask = 16; mask >= 1; mask /= 2) amax = fmaxf(amax, shfl_xor(amax, mask));
  const float scale = e4m3_block_scale(amax);
  for (int j = 0; j < 4; ++j) v[j] = e4m3_to_float(float_to_e4m3(v[j] / scale));
  auto* out = reinterpret_cast<uint32_t*>(sx_row + lane * 4);
  out[0] = pack_bf16x2(v[0], v[1]);
  out[1] = pack_bf16x2(v[2], v[3]);
  if (lane == 0) *xs = scale;
}

// Row n of W's block kb decoded into sw: e4m3 values (their block scale applies to the sum), or
// e2m1 values times their per-32 scale.
template <bool kFp4>
TS_DEVICE void decode_row(const uint8_t* w, const uint8_t* w_scale, int64_t out, int64_t in,
                          int64_t n, int64_t kb, int lane, uint16_t* sw_row) {
  float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int64_t first = kb * kBlock + lane * 4;
  if (n < out && first < in) {
    if constexpr (kFp4) {  // in is a multiple of 32: the lane's 4 inputs share one scale
      const uint8_t* pairs = w + n * (in / 2) + first / 2;
      const float s = ue8m0_to_float(w_scale[n * (in / 32) + first / 32]);
      for (int j = 0; j < 4; j += 2) {
        v[j] = e2m1_to_float(pairs[j / 2] & 0xF) * s;
        v[j + 1] = e2m1_to_float(pairs[j / 2] >> 4) * s;
      }
    } else {
      for (int j = 0; j < 4; ++j)
        if (first + j < in) v[j] = e4m3_to_float(w[n * in + first + j]);
    }
  }
  auto* dst = reinterpret_cast<uint32_t*>(sw_row + lane * 4);
  dst[0] = pack_bf16x2(v[0], v[1]);
  dst[1] = pack_bf16x2(v[2], v[3]);
}

// y[r0 + .., n0 + ..] for rows [r0, r0 + 64) ∩ [0, rows) and outputs [n0, n0 + 64) ∩ [0, out).
template <bool kFp4>
TS_DEVICE void tile_product(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                            const uint8_t* w_scale, int64_t out, float* y, int64_t r0, int64_t n0) {
  auto* sx = reinterpret_cast<uint16_t*>(dynamic_smem());
  uint16_t* sw = sx + kTileRows * kStride;
  auto* xs = reinterpret_cast<float*>(sw + kTileCols * kStride);
  const int warp = thread_index() >> 5, lane = thread_index() & 31;
  const int64_t blocks = (in + kBlock - 1) / kBlock;
  float total[8][4] = {}, partial[8][4];
  for (int64_t kb = 0; kb < blocks; ++kb) {
    for (int i = 0; i < 16; ++i) {
      const int t = warp * 16 + i;
      quantise_row(x, rows, in, r0 + t, kb, lane, sx + t * kStride, xs + t);
      decode_row<kFp4>(w, w_scale, out, in, n0 + t, kb, lane, sw + t * kStride);
    }
    sync_block();
    for (auto& p : partial)
      for (float& v : p) v = 0.0f;
    for (int kk = 0; kk < kBlock / 16; ++kk) {
      uint32_t a[4];
      ldmatrix_x4(a, sx + (warp * 16 + (lane & 15)) * kStride + kk * 16 + (lane >> 4) * 8);
      for (int j = 0; j < 8; j += 2) {  // two n-tiles of 8 outputs per ldmatrix
        uint32_t b[4];
        ldmatrix_x4(b, sw + ((j + (lane >> 4)) * 8 + (lane & 7)) * kStride + kk * 16 +
                           ((lane >> 3) & 1) * 8);
        mma_bf16_16816(partial[j], a, b[0], b[1]);
        mma_bf16_16816(partial[j + 1], a, b[2], b[3]);
      }
    }
    // Accumulator (row lane/4 (+8), outputs 2 (lane % 4) + {0, 1}) times its row's x scale and,
    // for e4m3, the W block's scale (the tile's 64 outputs lie in one 128-row scale block).
    const float w_block = kFp4 ? 1.0f : ue8m0_to_float(w_scale[(n0 / kBlock) * blocks + kb]);
    const float s_lo = xs[warp * 16 + (lane >> 2)] * w_block;
    const float s_hi = xs[warp * 16 + (lane >> 2) + 8] * w_block;
    for (int j = 0; j < 8; ++j) {
      total[j][0] += partial[j][0] * s_lo;
      total[j][1] += partial[j][1] * s_lo;
      total[j][2] += partial[j][2] * s_hi;
      total[j][3] += partial[j][3] * s_hi;
    }
    sync_block();  // the tiles are rewritten for the next block
  }
  store_warp_tile(total, r0 + warp * 16, n0, lane, rows, out, y);
}

// Block (bx, by): outputs [bx * 64, ..), rows [by * 64, ..).
template <bool kFp4>
TS_KERNEL(kThreads)
linear_quantised_mma_kernel(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                            const uint8_t* w_scale, int64_t out, float* y) {
  tile_product<kFp4>(x, rows, in, w, w_scale, out, y,
                     static_cast<int64_t>(block_index_y()) * kTileRows,
                     static_cast<int64_t>(block_index()) * kTileCols);
}

// Per expert (grid y): expert e's rows [offsets[e], offsets[e + 1]) with w[e], scale[e], row
// tile after row tile, for outputs [bx * 64, ..). Experts with fewer than kTensorCoreRows rows
// are the decode kernel's (linear_fp8.cu, launched beside this one) and return at once.
template <bool kFp4>
TS_KERNEL(kThreads)
grouped_quantised_mma_kernel(const float* x, int64_t in, const uint8_t* const* w,
                             const uint8_t* const* scale, const int64_t* offsets, int64_t out,
                             float* y) {
  const int64_t e = block_index_y(), first = offsets[e], rows = offsets[e + 1] - first;
  if (rows < kTensorCoreRows) return;  // the whole block: no barrier reached
  const int64_t n0 = static_cast<int64_t>(block_index()) * kTileCols;
  for (int64_t r0 = 0; r0 < rows; r0 += kTileRows) {
    tile_product<kFp4>(x + first * in, rows, in, w[e], scale[e], out, y + first * out, r0, n0);
  }
}

}  // namespace

cudaError_t launch_grouped_quantised_mma(bool fp4, const float* x, int64_t in,
                                         const uint8_t* const* w, const uint8_t* const* scale,
                                         int64_t experts, const int64_t* offsets, int64_t out,
                                         float* y, cudaStream_t stream) {
  if (experts <= 0 || out <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((out + kTileCols - 1) / kTileCols),
                  static_cast<unsigned>(experts));
  if (fp4) {
    TS_LAUNCH(grouped_quantised_mma_kernel<true>, grid, dim3(kThreads), kSharedBytes, stream, x, in,
              w, scale, offsets, out, y);
  } else {
    TS_LAUNCH(grouped_quantised_mma_kernel<false>, grid, dim3(kThreads), kSharedBytes, stream, x,
              in, w, scale, offsets, out, y);
  }
  return cudaGetLastError();
}

cudaError_t launch_linear_quantised_mma(bool fp4, const float* x, int64_t rows, int64_t in,
                                        const uint8_t* w, const uint8_t* w_scale, int64_t out,
                                        float* y, cudaStream_t stream) {
  if (rows <= 0 || out <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((out + kTileCols - 1) / kTileCols),
                  static_cast<unsigned>((rows + kTileRows - 1) / kTileRows));
  if (fp4) {
    TS_LAUNCH(linear_quantised_mma_kernel<true>, grid, dim3(kThreads), kSharedBytes, stream, x,
              rows, in, w, w_scale, out, y);
  } else {
    TS_LAUNCH(linear_quantised_mma_kernel<false>, grid, dim3(kThreads), kSharedBytes, stream, x,
              rows, in, w, w_scale, out, y);
  }
  return cudaGetLastError();
}

}  // namespace tessera::kernels
