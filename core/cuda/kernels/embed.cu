// The token embedding, copied into each of the mHC streams: a gather of table rows (bf16 widened
// exactly, or fp32) into fp32.
#include "device_primitives.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;

constexpr int kThreads = 256;

TS_DEVICE float widen(uint16_t v) { return bf16_to_float(v); }
TS_DEVICE float widen(float v) { return v; }

// table: [vocab, width] bf16 (uint16_t) or fp32; ids: [rows] int32; out: [rows, copies, width]
// fp32. One block per (row, copy).
template <class T>
TS_KERNEL(kThreads)
embed_kernel(const T* table, int64_t width, const int32_t* ids, int64_t copies, float* out) {
  const int64_t item = block_index();  // row * copies + copy
  const T* src = table + static_cast<int64_t>(ids[item / copies]) * width;
  float* dst = out + item * width;
  for (int64_t i = thread_index(); i < width; i += kThreads) dst[i] = widen(src[i]);
}

template <class T>
cudaError_t launch_embed(const T* table, int64_t width, const int32_t* ids, int64_t rows,
                         int64_t copies, float* out, cudaStream_t stream) {
  if (rows <= 0 || copies <= 0) return cudaSuccess;
  TS_LAUNCH(embed_kernel<T>, dim3(static_cast<unsigned>(rows * copies)), dim3(kThreads), 0, stream,
            table, width, ids, copies, out);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_embed_bf16(const uint16_t* table, int64_t width, const int32_t* ids,
                              int64_t rows, int64_t copies, float* out, cudaStream_t stream) {
  return launch_embed(table, width, ids, rows, copies, out, stream);
}

cudaError_t launch_embed_f32(const float* table, int64_t width, const int32_t* ids, int64_t rows,
                             int64_t copies, float* out, cudaStream_t stream) {
  return launch_embed(table, width, ids, rows, copies, out, stream);
}

}  // namespace tessera::kernels
