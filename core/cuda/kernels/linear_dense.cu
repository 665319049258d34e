// y = x . W^T with W in bf16 or fp32 as the checkpoint stores it (bf16 widened in registers),
// fp32 sums: the decode-shaped product (few rows, bound by reading W). One warp computes one output
// column for up to kRowsPerPass rows at once, its lanes striding over `in` two values at a time,
// and reduces by shuffles. Tensor-core (mma.sync) kernels for prefill shapes join beside it.
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

// x: [rows, in] fp32; w: [out, in] bf16 (uint16_t) or fp32; y: [rows, out] fp32. Block b:
// columns [b * kWarps, b * kWarps + kWarps), one per warp; every row, kRowsPerPass at a time.
template <class W>
TS_KERNEL(kThreads)
linear_dense_kernel(const float* x, int64_t rows, int64_t in, const W* w, int64_t out, float* y) {
  const int lane = thread_index() & 31;
  const int64_t column = static_cast<int64_t>(block_index()) * kWarps + (thread_index() >> 5);
  const bool active = column < out;  // idle warps still take part in no collective of others
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

cudaError_t launch_linear_bf16(const float* x, int64_t rows, int64_t in, const uint16_t* w,
                               int64_t out, float* y, cudaStream_t stream) {
  return launch_linear_dense(x, rows, in, w, out, y, stream);
}

cudaError_t launch_linear_f32(const float* x, int64_t rows, int64_t in, const float* w, int64_t out,
                              float* y, cudaStream_t stream) {
  return launch_linear_dense(x, rows, in, w, out, y, stream);
}

}  // namespace tessera::kernels
