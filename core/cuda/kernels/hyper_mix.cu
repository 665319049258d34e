// The mHC mixes of DeepSeek-V4 (ops/hyper_mix.hpp is the CPU definition, with the same order of
// operations per token): the site's logits from the flattened streams, the coefficients (sigmoid,
// softmax, Sinkhorn), the layer input from the streams, the streams from the block's output, and
// the head's mix.
#include "device_primitives.cuh"
#include "ops_launch.hpp"

namespace tessera::kernels {
namespace {

using namespace dev;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxStreams = 8;  // hc_mult (4 in DeepSeek-V4)

TS_DEVICE float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// The block's sum of v (every thread gets it); scratch: [kWarps] floats of shared memory.
TS_DEVICE float block_sum(float v, float* scratch) {
  for (int mask = 16; mask >= 1; mask /= 2) v += shfl_xor(v, mask);
  if ((thread_index() & 31) == 0) scratch[thread_index() >> 5] = v;
  sync_block();
  float total = 0.0f;
  for (int w = 0; w < kWarps; ++w) total += scratch[w];
  sync_block();
  return total;
}

// streams: [tokens, width]; fn: [rows, width] fp32; mix: [tokens, rows]. One block per token.
TS_KERNEL(kThreads)
mix_logits_kernel(const float* streams, int64_t width, const float* fn, int64_t rows, float eps,
                  float* mix) {
  auto* scratch = reinterpret_cast<float*>(dynamic_smem());  // [kWarps]
  const int64_t t = block_index();
  const float* x = streams + t * width;
  float sq = 0.0f;
  for (int64_t i = thread_index(); i < width; i += kThreads) sq += x[i] * x[i];
  const float scale = 1.0f / sqrtf(block_sum(sq, scratch) / static_cast<float>(width) + eps);
  const int lane = thread_index() & 31, warp = thread_index() >> 5;
  for (int64_t first = 0; first < rows; first += kWarps) {  // warp w: row first + w
    const int64_t r = first + warp;
    float dot = 0.0f;
    if (r < rows)
      for (int64_t i = lane; i < width; i += 32) dot += x[i] * fn[r * width + i];
    for (int mask = 16; mask >= 1; mask /= 2) dot += shfl_xor(dot, mask);
    if (r < rows && lane == 0) mix[t * rows + r] = dot * scale;
  }
}

// One thread per token: n <= kMaxStreams.
TS_KERNEL(kThreads)
coefficients_kernel(const float* mix, int64_t tokens, int64_t n, const float* scale,
                    const float* base, int64_t iters, float eps, float* pre, float* post,
                    float* comb) {
  const int64_t t = static_cast<int64_t>(block_index()) * kThreads + thread_index();
  if (t >= tokens) return;
  const int64_t rows = (2 + n) * n;
  const float* m = mix + t * rows;
  for (int64_t k = 0; k < n; ++k) {
    pre[t * n + k] = sigmoid(m[k] * scale[0] + base[k]) + eps;
    post[t * n + k] = 2.0f * sigmoid(m[n + k] * scale[1] + base[n + k]);
  }
  float* c = comb + t * n * n;
  for (int64_t j = 0; j < n; ++j) {  // softmax over the last axis of each row j
    float row_max = -__builtin_huge_valf();
    for (int64_t k = 0; k < n; ++k) {
      c[j * n + k] = m[2 * n + j * n + k] * scale[2] + base[2 * n + j * n + k];
      row_max = fmaxf(row_max, c[j * n + k]);
    }
    float sum = 0.0f;
    for (int64_t k = 0; k < n; ++k) sum += (c[j * n + k] = expf(c[j * n + k] - row_max));
    for (int64_t k = 0; k < n; ++k) c[j * n + k] = c[j * n + k] / sum + eps;
  }
  // Sinkhorn-Knopp: columns, then (iters - 1) rounds of rows then columns.
  for (int64_t round = 0; round < 2 * iters - 1; ++round) {
    const bool columns = round % 2 == 0;
    for (int64_t a = 0; a < n; ++a) {
      float sum = 0.0f;
      for (int64_t b = 0; b < n; ++b) sum += columns ? c[b * n + a] : c[a * n + b];
      for (int64_t b = 0; b < n; ++b) (columns ? c[b * n + a] : c[a * n + b]) /= (sum + eps);
    }
  }
}

// x[t, i] = sum_k pre[t, k] * streams[t, k, i]. Block: one token, a range of i.
TS_KERNEL(kThreads)
pre_mix_kernel(const float* pre, const float* streams, int64_t n, int64_t D, float* x) {
  const int64_t t = block_index_y();
  const int64_t i = static_cast<int64_t>(block_index()) * kThreads + thread_index();
  if (i >= D) return;
  float acc = 0.0f;
  for (int64_t k = 0; k < n; ++k) acc += pre[t * n + k] * streams[(t * n + k) * D + i];
  x[t * D + i] = acc;
}

// streams[t, k, i] = post[t, k] * out[t, i] + sum_j comb[t, j, k] * old streams[t, j, i].
TS_KERNEL(kThreads)
post_mix_kernel(const float* post, const float* comb, const float* out, int64_t n, int64_t D,
                float* streams) {
  const int64_t t = block_index_y();
  const int64_t i = static_cast<int64_t>(block_index()) * kThreads + thread_index();
  if (i >= D) return;
  float old[kMaxStreams];
  for (int64_t j = 0; j < n; ++j) old[j] = streams[(t * n + j) * D + i];
  for (int64_t k = 0; k < n; ++k) {
    float acc = post[t * n + k] * out[t * D + i];
    for (int64_t j = 0; j < n; ++j) acc += comb[(t * n + j) * n + k] * old[j];
    streams[(t * n + k) * D + i] = acc;
  }
}

// y[t, i] = sum_k (sigmoid(mix[t, k] * scale + base[k]) + eps) * streams[t, k, i].
TS_KERNEL(kThreads)
head_mix_kernel(const float* mix, const float* scale, const float* base, float eps,
                const float* streams, int64_t n, int64_t D, float* y) {
  const int64_t t = block_index_y();
  const int64_t i = static_cast<int64_t>(block_index()) * kThreads + thread_index();
  if (i >= D) return;
  float acc = 0.0f;
  for (int64_t k = 0; k < n; ++k)
    acc += (sigmoid(mix[t * n + k] * scale[0] + base[k]) + eps) * streams[(t * n + k) * D + i];
  y[t * D + i] = acc;
}

dim3 per_token_columns(int64_t tokens, int64_t D) {
  return dim3(static_cast<unsigned>((D + kThreads - 1) / kThreads), static_cast<unsigned>(tokens));
}

}  // namespace

cudaError_t launch_hc_mix_logits(const float* streams, int64_t tokens, int64_t width,
                                 const float* fn, int64_t rows, float eps, float* mix,
                                 cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  TS_LAUNCH(mix_logits_kernel, dim3(static_cast<unsigned>(tokens)), dim3(kThreads),
            kWarps * sizeof(float), stream, streams, width, fn, rows, eps, mix);
  return cudaGetLastError();
}

cudaError_t launch_hc_coefficients(const float* mix, int64_t tokens, int64_t n, const float* scale,
                                   const float* base, int64_t iters, float eps, float* pre,
                                   float* post, float* comb, cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  if (n > kMaxStreams) return cudaErrorInvalidValue;
  TS_LAUNCH(coefficients_kernel, dim3(static_cast<unsigned>((tokens + kThreads - 1) / kThreads)),
            dim3(kThreads), 0, stream, mix, tokens, n, scale, base, iters, eps, pre, post, comb);
  return cudaGetLastError();
}

cudaError_t launch_hc_pre_mix(const float* pre, const float* streams, int64_t tokens, int64_t n,
                              int64_t D, float* x, cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  TS_LAUNCH(pre_mix_kernel, per_token_columns(tokens, D), dim3(kThreads), 0, stream, pre, streams,
            n, D, x);
  return cudaGetLastError();
}

cudaError_t launch_hc_post_mix(const float* post, const float* comb, const float* out,
                               int64_t tokens, int64_t n, int64_t D, float* streams,
                               cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  if (n > kMaxStreams) return cudaErrorInvalidValue;
  TS_LAUNCH(post_mix_kernel, per_token_columns(tokens, D), dim3(kThreads), 0, stream, post, comb,
            out, n, D, streams);
  return cudaGetLastError();
}

cudaError_t launch_hc_head_mix(const float* mix, const float* scale, const float* base, float eps,
                               const float* streams, int64_t tokens, int64_t n, int64_t D, float* y,
                               cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  TS_LAUNCH(head_mix_kernel, per_token_columns(tokens, D), dim3(kThreads), 0, stream, mix, scale,
            base, eps, streams, n, D, y);
  return cudaGetLastError();
}

}  // namespace tessera::kernels
