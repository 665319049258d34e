// y = x . W^T as DeepSeek-V4's FP8 linear layers compute it (W8A8): W in the checkpoint's FP8 e4m3
// with one UE8M0 scale per 128x128 block, x quantised to e4m3 per 1x128 block with a
// power-of-two scale (number_formats.cuh), products of the quantised values summed in fp32 per
// block and scaled by both blocks' scales. Nothing is dequantised in memory: W is decoded in
// registers. Also the routed experts' FP4 product (W e2m1, one UE8M0 scale per 32 inputs) with
// the same activations. Decode-shaped (few rows): one warp per output column, each lane holding
// 4 of a block's 128 inputs. From kTensorCoreRows rows on the launchers hand the product to the
// tensor-core kernel of linear_quantised_mma.cu.
#include "device_primitives.cuh"
#include "number_formats.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;
using namespace formats;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kBlock = 128;  // inputs per activation block and per weight block

// The 4 inputs of x_row this lane holds in block kb, quantised, and the block's scale.
TS_DEVICE float quantised_inputs(const float* x_row, int64_t in, int64_t kb, int lane,
                                 float (&q)[4]) {
  float amax = 0.0f;
  for (int j = 0; j < 4; ++j) {
    const int64_t i = kb * kBlock + lane * 4 + j;
    q[j] = i < in ? x_row[i] : 0.0f;
    amax = fmaxf(amax, fabsf(q[j]));
  }
  for (int mask = 16; mask >= 1; mask /= 2) amax = fmaxf(amax, shfl_xor(amax, mask));
  const float scale = e4m3_block_scale(amax);
  for (float& v : q) v = e4m3_to_float(float_to_e4m3(v / scale));
  return scale;
}

TS_DEVICE float warp_sum(float v) {
  for (int mask = 16; mask >= 1; mask /= 2) v += shfl_xor(v, mask);
  return v;
}

// One output column (a warp's) of y[rows, out] = x[rows, in] . W^T. x: [rows, in] fp32; w:
// [out, in] e4m3; w_scale: [ceil(out/128), ceil(in/128)] ue8m0; y: [rows, out].
TS_DEVICE void fp8_column(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                          const uint8_t* w_scale, int64_t out, float* y, int lane, int64_t column) {
  const bool active = column < out;
  const int64_t blocks = (in + kBlock - 1) / kBlock;
  const uint8_t* wrow = w + (active ? column : 0) * in;
  const uint8_t* srow = w_scale + (active ? column : 0) / kBlock * blocks;
  for (int64_t r = 0; r < rows; ++r) {
    float acc = 0.0f;
    for (int64_t kb = 0; kb < blocks; ++kb) {
      float q[4];
      const float x_scale = quantised_inputs(x + r * in, in, kb, lane, q);
      float partial = 0.0f;
      for (int j = 0; j < 4; ++j) {
        const int64_t i = kb * kBlock + lane * 4 + j;
        if (active && i < in) partial += q[j] * e4m3_to_float(wrow[i]);
      }
      acc += warp_sum(partial) * (x_scale * ue8m0_to_float(srow[kb]));
    }
    if (active && lane == 0) y[r * out + column] = acc;
  }
}

// The same with w: [out, in / 2] bytes, two e2m1 per byte, the low nibble the even input;
// w_scale: [out, in/32] ue8m0. in is a multiple of 32.
TS_DEVICE void fp4_column(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                          const uint8_t* w_scale, int64_t out, float* y, int lane, int64_t column) {
  const bool active = column < out;
  const int64_t blocks = (in + kBlock - 1) / kBlock;
  const uint8_t* wrow = w + (active ? column : 0) * (in / 2);
  const uint8_t* srow = w_scale + (active ? column : 0) * (in / 32);
  for (int64_t r = 0; r < rows; ++r) {
    float acc = 0.0f;
    for (int64_t kb = 0; kb < blocks; ++kb) {
      float q[4];
      const float x_scale = quantised_inputs(x + r * in, in, kb, lane, q);
      const int64_t first = kb * kBlock + lane * 4;  // the lane's 4 inputs share one 32-group
      float partial = 0.0f;
      if (active && first < in) {
        for (int j = 0; j < 4; j += 2) {
          const uint8_t pair = wrow[(first + j) / 2];
          partial += q[j] * e2m1_to_float(pair & 0xF) + q[j + 1] * e2m1_to_float(pair >> 4);
        }
        partial *= ue8m0_to_float(srow[first / 32]);
      }
      acc += warp_sum(partial) * x_scale;
    }
    if (active && lane == 0) y[r * out + column] = acc;
  }
}

TS_DEVICE int64_t warp_column() {
  return static_cast<int64_t>(block_index()) * kWarps + (thread_index() >> 5);
}

// Block b: columns [b * kWarps, (b + 1) * kWarps), one per warp.
TS_KERNEL(kThreads)
linear_fp8_kernel(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                  const uint8_t* w_scale, int64_t out, float* y) {
  fp8_column(x, rows, in, w, w_scale, out, y, thread_index() & 31, warp_column());
}

TS_KERNEL(kThreads)
linear_fp4_kernel(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                  const uint8_t* w_scale, int64_t out, float* y) {
  fp4_column(x, rows, in, w, w_scale, out, y, thread_index() & 31, warp_column());
}

// Per expert: block (b, e) computes expert e's rows [offsets[e], offsets[e + 1]) with w[e] and
// scale[e]; an expert without rows, or with kTensorCoreRows rows or more (the tensor-core
// kernel's, launched beside this one), returns at once (the whole block: no barrier here).
TS_KERNEL(kThreads)
grouped_quantised_kernel(bool fp4, const float* x, int64_t in, const uint8_t* const* w,
                         const uint8_t* const* scale, const int64_t* offsets, int64_t out,
                         float* y) {
  const int64_t e = block_index_y(), first = offsets[e], rows = offsets[e + 1] - first;
  if (rows <= 0 || rows >= kTensorCoreRows) return;
  if (fp4) {
    fp4_column(x + first * in, rows, in, w[e], scale[e], out, y + first * out, thread_index() & 31,
               warp_column());
  } else {
    fp8_column(x + first * in, rows, in, w[e], scale[e], out, y + first * out, thread_index() & 31,
               warp_column());
  }
}

dim3 column_grid(int64_t out) { return dim3(static_cast<unsigned>((out + kWarps - 1) / kWarps)); }

}  // namespace

cudaError_t launch_linear_fp8(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                              const uint8_t* w_scale, int64_t out, float* y, cudaStream_t stream) {
  if (rows <= 0 || out <= 0) return cudaSuccess;
  if (rows >= kTensorCoreRows)
    return launch_linear_quantised_mma(false, x, rows, in, w, w_scale, out, y, stream);
  TS_LAUNCH(linear_fp8_kernel, column_grid(out), dim3(kThreads), 0, stream, x, rows, in, w, w_scale,
            out, y);
  return cudaGetLastError();
}

cudaError_t launch_grouped_linear(int32_t format, const float* x, int64_t in, const void* const* w,
                                  const uint8_t* const* scale, int64_t experts,
                                  const int64_t* offsets, int64_t out, float* y,
                                  cudaStream_t stream) {
  if (format == kLinearBf16 || format == kLinearF32)
    return launch_grouped_dense(format == kLinearBf16, x, in, w, experts, offsets, out, y, stream);
  if (format != kLinearFp8 && format != kLinearFp4) return cudaErrorInvalidValue;
  if (experts <= 0 || out <= 0) return cudaSuccess;
  const dim3 grid(column_grid(out).x, static_cast<unsigned>(experts));
  TS_LAUNCH(grouped_quantised_kernel, grid, dim3(kThreads), 0, stream, format == kLinearFp4, x, in,
            reinterpret_cast<const uint8_t* const*>(w), scale, offsets, out, y);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  // The row counts are on the device: each launch takes its experts and skips the others.
  return launch_grouped_quantised_mma(format == kLinearFp4, x, in,
                                      reinterpret_cast<const uint8_t* const*>(w), scale, experts,
                                      offsets, out, y, stream);
}

cudaError_t launch_linear_fp4(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                              const uint8_t* w_scale, int64_t out, float* y, cudaStream_t stream) {
  if (rows <= 0 || out <= 0) return cudaSuccess;
  if (rows >= kTensorCoreRows)
    return launch_linear_quantised_mma(true, x, rows, in, w, w_scale, out, y, stream);
  TS_LAUNCH(linear_fp4_kernel, column_grid(out), dim3(kThreads), 0, stream, x, rows, in, w, w_scale,
            out, y);
  return cudaGetLastError();
}

}  // namespace tessera::kernels
