// y = x . W^T with W in bf16 or fp32 as the checkpoint stores it (bf16 widened in registers),
// fp32 sums: the decode-shaped product (few rows, bound by reading W). One warp computes one output
// column for up to kRowsPerPass rows at once, its lanes striding over `in` two values at a time,
// and reduces by shuffles. From kTensorCoreRows rows on the bf16 launchers hand the product to the
// tensor-core kernel of linear_bf16_mma.cu; fp32 weights (test checkpoints) stay here.
#include "device_primitives.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerPass = 4;

TS_DEVICE float widen(uint16_t v) { return bf16_to_float(v); }
TS_DEVICE float widen(float v) { return v; }

// One output column (a warp's) of y[rows, out] = x[rows, in] . W^T, every row, kRowsPerPass at
// a time; w: [out, in] bf16 (uint16_t) or fp32. Idle warps (column >= out) still take part in the
// shuffles of their own warp only.
template <class W>
TS_DEVICE void dense_column(const float* x, int64_t rows, int64_t in, const W* w, int64_t out,
                            float* y, int lane, int64_t column) {
  const bool active = column < out;
  const W* wrow = w + (active ? column : 0) * in;
  for (int64_t first = 0; first < rows; first += kRowsPerPass) {
    float acc[kRowsPerPass] = {};
    const int64_t count = rows - first < kRowsPerPass ? rows - first : kRowsPerPass;
    if (active) {
      for (int64_t i = lane; i < in; i += 32) {
        const float wv = widen(wrow[i]);
        for (int r = 0; r < kRowsPerPass; ++r)
          if (r < count) acc[r] += x[(first + r) * in + i] * wv;
      }
    }
    for (int r = 0; r < kRowsPerPass; ++r)
      for (int mask = 16; mask >= 1; mask /= 2) acc[r] += shfl_xor(acc[r], mask);
    if (active && lane == 0)
      for (int r = 0; r < kRowsPerPass; ++r)
        if (r < count) y[(first + r) * out + column] = acc[r];
  }
}

// x: [rows, in] fp32; w: [out, in]; y: [rows, out] fp32. Block b: columns [b * kWarps,
// b * kWarps + kWarps), one per warp.
template <class W>
TS_KERNEL(kThreads)
linear_dense_kernel(const float* x, int64_t rows, int64_t in, const W* w, int64_t out, float* y) {
  const int64_t column = static_cast<int64_t>(block_index()) * kWarps + (thread_index() >> 5);
  dense_column(x, rows, in, w, out, y, thread_index() & 31, column);
}

// The same per expert: block (b, e) computes expert e's rows [offsets[e], offsets[e + 1]) with
// w[e]; an expert without rows, or for bf16 with kTensorCoreRows rows or more (the tensor-core
// kernel's, launched beside this one), returns at once (the whole block: no barrier here).
template <class W>
TS_KERNEL(kThreads)
grouped_dense_kernel(const float* x, int64_t in, const W* const* w, const int64_t* offsets,
                     int64_t out, float* y) {
  const int64_t e = block_index_y(), first = offsets[e], rows = offsets[e + 1] - first;
  constexpr bool kBf16 = sizeof(W) == sizeof(uint16_t);
  if (rows <= 0 || (kBf16 && rows >= kTensorCoreRows)) return;
  const int64_t column = static_cast<int64_t>(block_index()) * kWarps + (thread_index() >> 5);
  dense_column(x + first * in, rows, in, w[e], out, y + first * out, thread_index() & 31, column);
}

template <class W>
cudaError_t launch_linear_dense(const float* x, int64_t rows, int64_t in, const W* w, int64_t out,
                                float* y, cudaStream_t stream) {
  if (rows <= 0 || out <= 0) return cudaSuccess;
  const int64_t blocks = (out + kWarps - 1) / kWarps;
  TS_LAUNCH(linear_dense_kernel<W>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream,
            x, rows, in, w, out, y);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_grouped_dense(bool bf16, const float* x, int64_t in, const void* const* w,
                                 int64_t experts, const int64_t* offsets, int64_t out, float* y,
                                 cudaStream_t stream) {
  if (experts <= 0 || out <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((out + kWarps - 1) / kWarps),
                  static_cast<unsigned>(experts));
  if (bf16) {
    const auto* w16 = reinterpret_cast<const uint16_t* const*>(w);
    TS_LAUNCH(grouped_dense_kernel<uint16_t>, grid, dim3(kThreads), 0, stream, x, in, w16, offsets,
              out, y);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    // The row counts are on the device: each launch takes its experts and skips the others.
    return launch_grouped_bf16_mma(x, in, w16, experts, offsets, out, y, stream);
  } else {
    TS_LAUNCH(grouped_dense_kernel<float>, grid, dim3(kThreads), 0, stream, x, in,
              reinterpret_cast<const float* const*>(w), offsets, out, y);
  }
  return cudaGetLastError();
}

cudaError_t launch_linear_bf16(const float* x, int64_t rows, int64_t in, const uint16_t* w,
                               int64_t out, float* y, cudaStream_t stream) {
  if (rows >= kTensorCoreRows) return launch_linear_bf16_mma(x, rows, in, w, out, y, stream);
  return launch_linear_dense(x, rows, in, w, out, y, stream);
}

cudaError_t launch_linear_f32(const float* x, int64_t rows, int64_t in, const float* w, int64_t out,
                              float* y, cudaStream_t stream) {
  return launch_linear_dense(x, rows, in, w, out, y, stream);
}

}  // namespace tessera::kernels
