// The MoE's data movement around the expert GEMMs (model/moe.cpp is the CPU definition): the
// routed rows grouped by expert on the device, gathered from the tokens, and each token's expert
// results added into its shared expert output, weighted, in expert order.
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

// One block. picked, weight: [tokens, K]; offsets: [E + 1]; source, src: [tokens * K] int64;
// combine_weight: [tokens * K]. Rows grouped by expert, tokens in order within an expert;
// src[t * K + c] is the row of token t's pick with the c-th smallest expert (the combine's
// order). Picks outside [0, E) (a routing failure, reported by the router) join no expert: every
// output starts at row 0 and weight 0 so that later kernels stay inside their buffers.
TS_KERNEL(kThreads)
moe_group_kernel(const int32_t* picked, const float* weight, int64_t tokens, int64_t K, int64_t E,
                 int64_t* offsets, int64_t* source, int64_t* src, float* combine_weight) {
  const int64_t n = tokens * K;
  for (int64_t i = thread_index(); i < n; i += kThreads) {
    source[i] = 0;
    src[i] = 0;
    combine_weight[i] = 0.0f;
  }
  for (int64_t e = thread_index(); e < E; e += kThreads) {
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) count += picked[i] == e;
    offsets[e + 1] = count;
  }
  sync_block();
  if (thread_index() == 0) {
    offsets[0] = 0;
    for (int64_t e = 0; e < E; ++e) offsets[e + 1] += offsets[e];
  }
  sync_block();
  for (int64_t e = thread_index(); e < E; e += kThreads) {
    int64_t row = offsets[e];
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t k = 0; k < K; ++k) {
        if (picked[t * K + k] != e) continue;
        int64_t c = 0;  // picks of t with a smaller expert come first
        for (int64_t j = 0; j < K; ++j) {
          const int32_t other = picked[t * K + j];
          c += other >= 0 && other < e;
        }
        source[row] = t;
        src[t * K + c] = row;
        combine_weight[t * K + c] = weight[t * K + k];
        ++row;
      }
  }
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

cudaError_t launch_moe_group(const int32_t* picked, const float* weight, int64_t tokens, int64_t K,
                             int64_t E, int64_t* offsets, int64_t* source, int64_t* src,
                             float* combine_weight, cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  TS_LAUNCH(moe_group_kernel, dim3(1), dim3(kThreads), 0, stream, picked, weight, tokens, K, E,
            offsets, source, src, combine_weight);
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
