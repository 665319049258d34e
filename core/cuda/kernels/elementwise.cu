// The forward's data movers: scaling values in place (the indexer's head weights), swapping the
// two outer axes of a 3-d array (the grouped output projection's group-major copy of the
// attention output, and its way back), and fp32 <-> bf16 for the bf16 collectives.
#include "device_primitives.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

int64_t blocks_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return blocks < kMaxBlocks ? blocks : kMaxBlocks;
}

// x: [count] fp32, x[i] *= s. Grid-stride.
TS_KERNEL(kThreads) scale_kernel(float* x, int64_t count, float s) {
  const int64_t stride = static_cast<int64_t>(grid_blocks()) * kThreads;
  for (int64_t i = static_cast<int64_t>(block_index()) * kThreads + thread_index(); i < count;
       i += stride)
    x[i] *= s;
}

// x: [A, B, C] fp32 -> out: [B, A, C], out[b, a, c] = x[a, b, c]. Grid-stride over out.
TS_KERNEL(kThreads)
swap_outer_axes_kernel(const float* x, int64_t A, int64_t B, int64_t C, float* out) {
  const int64_t count = A * B * C;
  const int64_t stride = static_cast<int64_t>(grid_blocks()) * kThreads;
  for (int64_t i = static_cast<int64_t>(block_index()) * kThreads + thread_index(); i < count;
       i += stride) {
    const int64_t c = i % C, ba = i / C, a = ba % A, b = ba / A;
    out[i] = x[(a * B + b) * C + c];
  }
}

// out[i] = bf16(x[i]), round to nearest even (NaN stays NaN). Grid-stride.
TS_KERNEL(kThreads) round_to_bf16_kernel(const float* x, int64_t count, uint16_t* out) {
  const int64_t stride = static_cast<int64_t>(grid_blocks()) * kThreads;
  for (int64_t i = static_cast<int64_t>(block_index()) * kThreads + thread_index(); i < count;
       i += stride)
    out[i] = static_cast<uint16_t>(pack_bf16x2(x[i], 0.0f) & 0xFFFFu);
}

// y[i] = in[i] widened to fp32 (exact). Grid-stride.
TS_KERNEL(kThreads) widen_bf16_kernel(const uint16_t* in, int64_t count, float* y) {
  const int64_t stride = static_cast<int64_t>(grid_blocks()) * kThreads;
  for (int64_t i = static_cast<int64_t>(block_index()) * kThreads + thread_index(); i < count;
       i += stride)
    y[i] = bf16_to_float(in[i]);
}

}  // namespace

cudaError_t launch_round_to_bf16(const float* x, int64_t count, uint16_t* out,
                                 cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  TS_LAUNCH(round_to_bf16_kernel, dim3(static_cast<unsigned>(blocks_for(count))), dim3(kThreads), 0,
            stream, x, count, out);
  return cudaGetLastError();
}

cudaError_t launch_widen_bf16(const uint16_t* in, int64_t count, float* y, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  TS_LAUNCH(widen_bf16_kernel, dim3(static_cast<unsigned>(blocks_for(count))), dim3(kThreads), 0,
            stream, in, count, y);
  return cudaGetLastError();
}

cudaError_t launch_scale(float* x, int64_t count, float s, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  TS_LAUNCH(scale_kernel, dim3(static_cast<unsigned>(blocks_for(count))), dim3(kThreads), 0, stream,
            x, count, s);
  return cudaGetLastError();
}

cudaError_t launch_swap_outer_axes(const float* x, int64_t A, int64_t B, int64_t C, float* out,
                                   cudaStream_t stream) {
  const int64_t count = A * B * C;
  if (count <= 0) return cudaSuccess;
  TS_LAUNCH(swap_outer_axes_kernel, dim3(static_cast<unsigned>(blocks_for(count))), dim3(kThreads),
            0, stream, x, A, B, C, out);
  return cudaGetLastError();
}

}  // namespace tessera::kernels
