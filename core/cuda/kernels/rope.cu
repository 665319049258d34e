// Rotary embedding on the trailing rope_dim channels, interleaved pairs (ops/rope.hpp is the CPU
// oracle): angle = position * inv_freq[i] in fp32, as the CPU computes it.
#include "device_primitives.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;

constexpr int kThreads = 128;

// x: [tokens, heads, width] fp32, in place; positions: [tokens] int32; inv_freq: [rope_dim / 2].
// One block per (token, head); a thread per pair.
TS_KERNEL(kThreads)
rope_kernel(float* x, int64_t heads, int64_t width, int64_t rope_dim, const int32_t* positions,
            const float* inv_freq, bool inverse) {
  const int64_t item = block_index();  // token * heads + head
  const float position = static_cast<float>(positions[item / heads]);
  float* pairs = x + item * width + (width - rope_dim);
  for (int64_t i = thread_index(); i < rope_dim / 2; i += kThreads) {
    const float angle = position * inv_freq[i];
    const float c = cosf(angle), s = inverse ? -sinf(angle) : sinf(angle);
    const float a = pairs[2 * i], b = pairs[2 * i + 1];
    pairs[2 * i] = a * c - b * s;
    pairs[2 * i + 1] = b * c + a * s;
  }
}

}  // namespace

cudaError_t launch_rope(float* x, int64_t tokens, int64_t heads, int64_t width, int64_t rope_dim,
                        const int32_t* positions, const float* inv_freq, bool inverse,
                        cudaStream_t stream) {
  if (tokens <= 0 || heads <= 0 || rope_dim <= 0) return cudaSuccess;
  TS_LAUNCH(rope_kernel, dim3(static_cast<unsigned>(tokens * heads)), dim3(kThreads), 0, stream, x,
            heads, width, rope_dim, positions, inv_freq, inverse);
  return cudaGetLastError();
}

}  // namespace tessera::kernels
