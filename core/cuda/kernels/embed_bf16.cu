// The token embedding, copied into each of the mHC streams: a gather of bf16 rows widened to fp32.
#include "device_primitives.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;

constexpr int kThreads = 256;

// table: [vocab, width] bf16; ids: [rows] int32; out: [rows, copies, width] fp32.
// One block per (row, copy).
TS_KERNEL(kThreads)
embed_bf16_kernel(const uint16_t* table, int64_t width, const int32_t* ids, int64_t copies,
                  float* out) {
  const int64_t item = block_index();  // row * copies + copy
  const uint16_t* src = table + static_cast<int64_t>(ids[item / copies]) * width;
  float* dst = out + item * width;
  for (int64_t i = thread_index(); i < width; i += kThreads) dst[i] = bf16_to_float(src[i]);
}

}  // namespace

cudaError_t launch_embed_bf16(const uint16_t* table, int64_t width, const int32_t* ids,
                              int64_t rows, int64_t copies, float* out, cudaStream_t stream) {
  if (rows <= 0 || copies <= 0) return cudaSuccess;
  TS_LAUNCH(embed_bf16_kernel, dim3(static_cast<unsigned>(rows * copies)), dim3(kThreads), 0,
            stream, table, width, ids, copies, out);
  return cudaGetLastError();
}

}  // namespace tessera::kernels
