// Two data movers of the forward: scaling values in place (the indexer's head weights) and
// swapping the two outer axes of a 3-d array (the grouped output projection's group-major copy
// of the attention output, and its way back).
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

}  // namespace

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
