// The clamped SwiGLU between an expert's w1/w3 and w2 (ops/swiglu.hpp is the CPU oracle).
#include "device_primitives.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;

constexpr int kThreads = 256;

// g, u: [count] fp32; g is overwritten. Grid-stride over count.
TS_KERNEL(kThreads) swiglu_kernel(float* g, const float* u, int64_t count, float limit) {
  const int64_t stride = static_cast<int64_t>(grid_blocks()) * kThreads;
  for (int64_t i = static_cast<int64_t>(block_index()) * kThreads + thread_index(); i < count;
       i += stride) {
    float gi = g[i], ui = u[i];
    if (limit > 0) {
      gi = fminf(gi, limit);
      ui = fminf(fmaxf(ui, -limit), limit);
    }
    g[i] = gi / (1.0f + expf(-gi)) * ui;
  }
}

}  // namespace

cudaError_t launch_swiglu(float* g, const float* u, int64_t count, float limit,
                          cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  TS_LAUNCH(swiglu_kernel, dim3(static_cast<unsigned>(blocks < 4096 ? blocks : 4096)),
            dim3(kThreads), 0, stream, g, u, count, limit);
  return cudaGetLastError();
}

}  // namespace tessera::kernels
