// The MoE's data movement around the expert GEMMs (model/moe.cpp is the CPU definition): the
// routed rows gathered from the tokens, and each token's expert results added into its shared
// expert output, weighted, in expert order.
#include "device_primitives.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;

constexpr int kThreads = 256;

// x: [tokens, D]; source: [rows] token of each gathered row; gathered: [rows, D].
// Block (column range, row).
TS_KERNEL(kThreads)
gather_rows_kernel(const float* x, const int64_t* source, int64_t D, float* gathered) {
  const int64_t r = block_index_y();
  const int64_t i = static_cast<int64_t>(block_index()) * kThreads + thread_index();
  if (i < D) gathered[r * D + i] = x[source[r] * D + i];
}

// out: [tokens, D] += sum_k weight[t, k] * results[src[t, k]] in k order; src, weight [tokens, K].
TS_KERNEL(kThreads)
combine_kernel(const float* results, const int64_t* src, const float* weight, int64_t K, int64_t D,
               float* out) {
  const int64_t t = block_index_y();
  const int64_t i = static_cast<int64_t>(block_index()) * kThreads + thread_index();
  if (i >= D) return;
  float acc = out[t * D + i];
  for (int64_t k = 0; k < K; ++k) acc += weight[t * K + k] * results[src[t * K + k] * D + i];
  out[t * D + i] = acc;
}

dim3 rows_by_columns(int64_t rows, int64_t D) {
  return dim3(static_cast<unsigned>((D + kThreads - 1) / kThreads), static_cast<unsigned>(rows));
}

}  // namespace

cudaError_t launch_gather_rows(const float* x, const int64_t* source, int64_t rows, int64_t D,
                               float* gathered, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  TS_LAUNCH(gather_rows_kernel, rows_by_columns(rows, D), dim3(kThreads), 0, stream, x, source, D,
            gathered);
  return cudaGetLastError();
}

cudaError_t launch_moe_combine(const float* results, const int64_t* src, const float* weight,
                               int64_t tokens, int64_t K, int64_t D, float* out,
                               cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  TS_LAUNCH(combine_kernel, rows_by_columns(tokens, D), dim3(kThreads), 0, stream, results, src,
            weight, K, D, out);
  return cudaGetLastError();
}

}  // namespace tessera::kernels
