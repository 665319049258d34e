// y = x . W^T for bf16 weights on tensor cores (mma.sync m16n8k16 bf16, fp32 sums), for
// prefill-shaped products (many rows); linear_dense.cu holds the decode-shaped kernel and the
// definition: x in fp32, W in bf16, fp32 sums. The tensor cores take bf16 inputs, so each x value
// is split into three bf16 parts, hi = bf16(x), mid = bf16(x - hi), lo = bf16(x - hi - mid), each
// multiplied by W (three mma per tile step): |x - hi - mid - lo| <= 2^-27 |x|, so every product
// is the fp32 one to within its own rounding and only the order of the sums differs from the
// decode kernel (as for the cpu backend). Two parts (2^-18) would move W8A8 checkpoints'
// activations across e4m3 rounding boundaries far more often than fp32 summation order does.
//
// Tiles: a block of 4 warps computes a 64 x 64 tile of y (rows x outputs); per chunk of 64
// inputs each warp splits 16 rows of x and copies 16 rows of W into shared memory (rows of 72
// bf16: 144 bytes, so the 8 rows an ldmatrix reads fall in different banks), then multiplies its
// 16 rows by the 64 outputs: 4 k-steps x 8 n-tiles x 3 parts of mma.
#include "device_primitives.cuh"
#include "mma_tile.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;

constexpr int kThreads = 128;
constexpr int kTileRows = 64, kTileCols = 64, kChunk = 64;
constexpr int kStride = kChunk + 8;  // bf16 per shared row
constexpr int kParts = 3;            // hi, mid, lo
constexpr size_t kSharedBytes = (kParts + 1) * kTileRows * kStride * sizeof(uint16_t);

// Row `row` of x's chunk kc split into kParts bf16 parts, part p at sx + p * kPartStride (two
// values a lane). Each remainder is exact in fp32 (Sterbenz), so the parts sum to x within the
// last part's rounding.
constexpr int kPartStride = kTileRows * kStride;
TS_DEVICE void split_row(const float* x, int64_t rows, int64_t in, int64_t row, int64_t kc,
                         int lane, uint16_t* sx_row) {
  const int64_t i = kc * kChunk + 2 * lane;
  float v0 = row < rows && i < in ? x[row * in + i] : 0.0f;
  float v1 = row < rows && i + 1 < in ? x[row * in + i + 1] : 0.0f;
  for (int p = 0; p < kParts; ++p) {
    const uint32_t part = pack_bf16x2(v0, v1);
    *reinterpret_cast<uint32_t*>(sx_row + p * kPartStride + 2 * lane) = part;
    v0 -= bits_float(part << 16);
    v1 -= bits_float(part & 0xFFFF0000u);
  }
}

// Row n of W's chunk kc into shared memory as it is stored (zero past `in` and `out`).
TS_DEVICE void copy_row(const uint16_t* w, int64_t out, int64_t in, int64_t n, int64_t kc, int lane,
                        uint16_t* sw_row) {
  const int64_t i = kc * kChunk + 2 * lane;
  const uint32_t w0 = n < out && i < in ? w[n * in + i] : 0u;
  const uint32_t w1 = n < out && i + 1 < in ? w[n * in + i + 1] : 0u;
  *reinterpret_cast<uint32_t*>(sw_row + 2 * lane) = w0 | w1 << 16;
}

// y[r0 + .., n0 + ..] for rows [r0, r0 + 64) ∩ [0, rows) and outputs [n0, n0 + 64) ∩ [0, out).
TS_DEVICE void tile_product(const float* x, int64_t rows, int64_t in, const uint16_t* w,
                            int64_t out, float* y, int64_t r0, int64_t n0) {
  auto* sx = reinterpret_cast<uint16_t*>(dynamic_smem());  // kParts tiles of x, then W's
  uint16_t* sw = sx + kParts * kPartStride;
  const int warp = thread_index() >> 5, lane = thread_index() & 31;
  const int64_t chunks = (in + kChunk - 1) / kChunk;
  float acc[8][4] = {};
  for (int64_t kc = 0; kc < chunks; ++kc) {
    for (int i = 0; i < 16; ++i) {
      const int t = warp * 16 + i;
      split_row(x, rows, in, r0 + t, kc, lane, sx + t * kStride);
      copy_row(w, out, in, n0 + t, kc, lane, sw + t * kStride);
    }
    sync_block();
    for (int kk = 0; kk < kChunk / 16; ++kk) {
      const int a_at = (warp * 16 + (lane & 15)) * kStride + kk * 16 + (lane >> 4) * 8;
      uint32_t a[kParts][4];
      for (int p = 0; p < kParts; ++p) ldmatrix_x4(a[p], sx + p * kPartStride + a_at);
      for (int j = 0; j < 8; j += 2) {  // two n-tiles of 8 outputs per ldmatrix
        uint32_t b[4];
        ldmatrix_x4(b, sw + ((j + (lane >> 4)) * 8 + (lane & 7)) * kStride + kk * 16 +
                           ((lane >> 3) & 1) * 8);
        for (int p = kParts - 1; p >= 0; --p) {  // the smallest part first
          mma_bf16_16816(acc[j], a[p], b[0], b[1]);
          mma_bf16_16816(acc[j + 1], a[p], b[2], b[3]);
        }
      }
    }
    sync_block();  // the tiles are rewritten for the next chunk
  }
  store_warp_tile(acc, r0 + warp * 16, n0, lane, rows, out, y);
}

// Block (bx, by): outputs [bx * 64, ..), rows [by * 64, ..).
TS_KERNEL(kThreads)
linear_bf16_mma_kernel(const float* x, int64_t rows, int64_t in, const uint16_t* w, int64_t out,
                       float* y) {
  tile_product(x, rows, in, w, out, y, static_cast<int64_t>(block_index_y()) * kTileRows,
               static_cast<int64_t>(block_index()) * kTileCols);
}

// Per expert (grid y): expert e's rows [offsets[e], offsets[e + 1]) with w[e], row tile after
// row tile, for outputs [bx * 64, ..). Experts with fewer than kTensorCoreRows rows are the
// decode kernel's (linear_dense.cu, launched beside this one) and return at once.
TS_KERNEL(kThreads)
grouped_bf16_mma_kernel(const float* x, int64_t in, const uint16_t* const* w,
                        const int64_t* offsets, int64_t out, float* y) {
  const int64_t e = block_index_y(), first = offsets[e], rows = offsets[e + 1] - first;
  if (rows < kTensorCoreRows) return;  // the whole block: no barrier reached
  const int64_t n0 = static_cast<int64_t>(block_index()) * kTileCols;
  for (int64_t r0 = 0; r0 < rows; r0 += kTileRows) {
    tile_product(x + first * in, rows, in, w[e], out, y + first * out, r0, n0);
  }
}

}  // namespace

cudaError_t launch_linear_bf16_mma(const float* x, int64_t rows, int64_t in, const uint16_t* w,
                                   int64_t out, float* y, cudaStream_t stream) {
  if (rows <= 0 || out <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((out + kTileCols - 1) / kTileCols),
                  static_cast<unsigned>((rows + kTileRows - 1) / kTileRows));
  TS_LAUNCH(linear_bf16_mma_kernel, grid, dim3(kThreads), kSharedBytes, stream, x, rows, in, w, out,
            y);
  return cudaGetLastError();
}

cudaError_t launch_grouped_bf16_mma(const float* x, int64_t in, const uint16_t* const* w,
                                    int64_t experts, const int64_t* offsets, int64_t out, float* y,
                                    cudaStream_t stream) {
  if (experts <= 0 || out <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((out + kTileCols - 1) / kTileCols),
                  static_cast<unsigned>(experts));
  TS_LAUNCH(grouped_bf16_mma_kernel, grid, dim3(kThreads), kSharedBytes, stream, x, in, w, offsets,
            out, y);
  return cudaGetLastError();
}

}  // namespace tessera::kernels
