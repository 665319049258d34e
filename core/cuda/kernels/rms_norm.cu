// RMSNorm of DeepSeek-V4 (ops/norms.hpp is the CPU oracle): one block per row, fp32 sums of
// squares reduced by warp shuffles and one shared-memory pass.
#include "device_primitives.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;

constexpr int kThreads = 256;

TS_DEVICE float weight_at(const float* w, int64_t i) { return w[i]; }
TS_DEVICE float weight_at(const uint16_t* w, int64_t i) { return bf16_to_float(w[i]); }

// x: [rows, width] fp32, in place; weight: [width] fp32 or bf16 (as the checkpoint stores norms),
// or null. One block per row.
template <class Weight>
TS_KERNEL(kThreads)
rms_norm_kernel(float* x, int64_t width, const Weight* weight, float eps) {
  const int tid = thread_index();
  float* row = x + static_cast<int64_t>(block_index()) * width;
  float sum = 0.0f;
  for (int64_t i = tid; i < width; i += kThreads) sum += row[i] * row[i];
  for (int mask = 16; mask >= 1; mask /= 2) sum += shfl_xor(sum, mask);
  auto* warp_sums = reinterpret_cast<float*>(dynamic_smem());  // [kThreads / 32]
  if ((tid & 31) == 0) warp_sums[tid >> 5] = sum;
  sync_block();
  float total = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
  const float scale = 1.0f / sqrtf(total / static_cast<float>(width) + eps);
  for (int64_t i = tid; i < width; i += kThreads)
    row[i] = weight != nullptr ? weight_at(weight, i) * (row[i] * scale) : row[i] * scale;
}

}  // namespace

cudaError_t launch_rms_norm(float* x, int64_t rows, int64_t width, const float* weight, float eps,
                            cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  TS_LAUNCH(rms_norm_kernel<float>, dim3(static_cast<unsigned>(rows)), dim3(kThreads),
            kThreads / 32 * sizeof(float), stream, x, width, weight, eps);
  return cudaGetLastError();
}

cudaError_t launch_rms_norm_bf16(float* x, int64_t rows, int64_t width, const uint16_t* weight,
                                 float eps, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  TS_LAUNCH(rms_norm_kernel<uint16_t>, dim3(static_cast<unsigned>(rows)), dim3(kThreads),
            kThreads / 32 * sizeof(float), stream, x, width, weight, eps);
  return cudaGetLastError();
}

}  // namespace tessera::kernels
