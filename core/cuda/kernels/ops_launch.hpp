// Host entry points of the core's forward kernels (one .cu per op in this folder, shapes in a
// comment above each kernel). Each launches on `stream` and returns the launch status; nothing
// here allocates or synchronises. Compiled by nvcc for the CUDA module and as C++ for the
// emulated one (TESSERA_DEVICE_EMULATION), from the same source.
#pragma once

#include <cstdint>

#include "ops/row_scan.hpp"

#ifdef TESSERA_DEVICE_EMULATION
#include "cuda_runtime_emulation.hpp"
#else
#include <cuda_runtime.h>
#endif

namespace tessera::kernels {

// x[rows, width] = weight[width] * x * rsqrt(mean(x^2) + eps), in place (weight null: none).
cudaError_t launch_rms_norm(float* x, int64_t rows, int64_t width, const float* weight, float eps,
                            cudaStream_t stream);
// The same with the weight in bf16 (the checkpoint's norms), widened exactly.
cudaError_t launch_rms_norm_bf16(float* x, int64_t rows, int64_t width, const uint16_t* weight,
                                 float eps, cudaStream_t stream);

// g[i] = silu(min(g[i], limit)) * clamp(u[i], -limit, limit), i < count (limit 0: no clamp).
cudaError_t launch_swiglu(float* g, const float* u, int64_t count, float limit,
                          cudaStream_t stream);

// out[t, c, :] = table[ids[t], :] widened from bf16, for c < copies (the mHC streams); embed.cu.
cudaError_t launch_embed_bf16(const uint16_t* table, int64_t width, const int32_t* ids,
                              int64_t rows, int64_t copies, float* out, cudaStream_t stream);
// The same from an fp32 table.
cudaError_t launch_embed_f32(const float* table, int64_t width, const int32_t* ids, int64_t rows,
                             int64_t copies, float* out, cudaStream_t stream);

// y[rows, out] = x[rows, in] . W^T, W [out, in] in bf16 widened in registers, fp32 sums
// (linear_dense.cu).
cudaError_t launch_linear_bf16(const float* x, int64_t rows, int64_t in, const uint16_t* w,
                               int64_t out, float* y, cudaStream_t stream);
// The same with W in fp32.
cudaError_t launch_linear_f32(const float* x, int64_t rows, int64_t in, const float* w, int64_t out,
                              float* y, cudaStream_t stream);

// y[rows, out] = x . W^T, W8A8 (linear_fp8.cu): W [out, in] FP8 e4m3 with w_scale
// [ceil(out/128), ceil(in/128)] UE8M0; x quantised to e4m3 per 1x128 block (power-of-two scale).
cudaError_t launch_linear_fp8(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                              const uint8_t* w_scale, int64_t out, float* y, cudaStream_t stream);

// The same with W [out, in / 2] packed FP4 e2m1 and w_scale [out, in / 32] UE8M0 (in % 32 == 0).
cudaError_t launch_linear_fp4(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                              const uint8_t* w_scale, int64_t out, float* y, cudaStream_t stream);

// From this many rows on (a product's, or one expert's in a grouped product) the launchers hand
// bf16, FP8 and FP4 products to the tensor-core kernels below; fewer rows stay decode-shaped.
inline constexpr int64_t kTensorCoreRows = 16;
// The bf16 product on tensor cores (linear_bf16_mma.cu): x split into three bf16 parts.
cudaError_t launch_linear_bf16_mma(const float* x, int64_t rows, int64_t in, const uint16_t* w,
                                   int64_t out, float* y, cudaStream_t stream);
// Its grouped form for the experts with kTensorCoreRows rows or more (launch_grouped_dense
// launches it beside the decode-shaped kernel, which takes the others).
cudaError_t launch_grouped_bf16_mma(const float* x, int64_t in, const uint16_t* const* w,
                                    int64_t experts, const int64_t* offsets, int64_t out, float* y,
                                    cudaStream_t stream);
// Either quantised product on tensor cores (linear_quantised_mma.cu), the same quantised values
// summed in another order within each 128-input block.
cudaError_t launch_linear_quantised_mma(bool fp4, const float* x, int64_t rows, int64_t in,
                                        const uint8_t* w, const uint8_t* w_scale, int64_t out,
                                        float* y, cudaStream_t stream);
// The grouped expert product on tensor cores for the experts with kTensorCoreRows rows or more
// (launch_grouped_linear launches it beside the decode-shaped kernel, which takes the others).
cudaError_t launch_grouped_quantised_mma(bool fp4, const float* x, int64_t in,
                                         const uint8_t* const* w, const uint8_t* const* scale,
                                         int64_t experts, const int64_t* offsets, int64_t out,
                                         float* y, cudaStream_t stream);

// The MoE router of ops/moe_routing.hpp (moe_routing.cu): scores [tokens, E] in place, picked
// and weights [tokens, K]; tid2eid null for a learned layer; *bad min-reduced with the lowest
// token whose routing failed (the caller initialises it to `tokens`).
cudaError_t launch_moe_routing(float* scores, int64_t tokens, int64_t E, int64_t K,
                               const float* bias, const int32_t* tid2eid, int64_t table_size,
                               const int32_t* token_ids, double scaling, int32_t* picked,
                               float* weights, int64_t* bad, cudaStream_t stream);

// The mHC mixes (hyper_mix.cu; ops/hyper_mix.hpp has their definitions): the site's logits
// mix[T, rows] = (streams[t] . fn^T) * rsqrt(mean(streams[t]^2) + eps), streams [T, width], fn
// [rows, width] fp32; the coefficients pre/post [T, n] and comb [T, n, n] (n <= 8) from them;
// x [T, D] from the streams [T, n, D]; the streams from the block's output; the head's mix.
cudaError_t launch_hc_mix_logits(const float* streams, int64_t tokens, int64_t width,
                                 const float* fn, int64_t rows, float eps, float* mix,
                                 cudaStream_t stream);
cudaError_t launch_hc_coefficients(const float* mix, int64_t tokens, int64_t n, const float* scale,
                                   const float* base, int64_t iters, float eps, float* pre,
                                   float* post, float* comb, cudaStream_t stream);
cudaError_t launch_hc_pre_mix(const float* pre, const float* streams, int64_t tokens, int64_t n,
                              int64_t D, float* x, cudaStream_t stream);
cudaError_t launch_hc_post_mix(const float* post, const float* comb, const float* out,
                               int64_t tokens, int64_t n, int64_t D, float* streams,
                               cudaStream_t stream);
cudaError_t launch_hc_head_mix(const float* mix, const float* scale, const float* base, float eps,
                               const float* streams, int64_t tokens, int64_t n, int64_t D, float* y,
                               cudaStream_t stream);

// scans[r] and group_max[r, TS_LOGIT_GROUP_COUNT(vocab)] (null: not wanted) of logits
// [rows, vocab] (row_scan.cu).
cudaError_t launch_row_scan(const float* logits, int64_t rows, int64_t vocab, ops::RowScan* scans,
                            float* group_max, cudaStream_t stream);

// gathered[r] = x[source[r]] (moe_combine.cu); x [tokens, D], gathered [rows, D].
cudaError_t launch_gather_rows(const float* x, const int64_t* source, int64_t rows, int64_t D,
                               float* gathered, cudaStream_t stream);
// The routed rows grouped by expert on the device (ops/moe_grouping.hpp is the definition):
// picked, weight [tokens, K] -> offsets [E + 1], source [tokens * K] (token of each grouped row),
// src and combine_weight [tokens * K] (each token's rows and weights in expert order).
cudaError_t launch_moe_group(const int32_t* picked, const float* weight, int64_t tokens, int64_t K,
                             int64_t E, int64_t* offsets, int64_t* source, int64_t* src,
                             float* combine_weight, cudaStream_t stream);
// Every expert's product over its rows: y[r] = x[r] . W_e^T for r in [offsets[e], offsets[e+1]),
// e < experts; w and scale: device arrays of `experts` pointers to weights of one format
// (kLinearBf16, kLinearF32, kLinearFp8, kLinearFp4: the layouts of the launchers above; scale
// null for bf16 / f32); x [rows, in], y [rows, out].
enum LinearFormat : int32_t { kLinearBf16 = 0, kLinearF32 = 1, kLinearFp8 = 2, kLinearFp4 = 3 };
cudaError_t launch_grouped_linear(int32_t format, const float* x, int64_t in, const void* const* w,
                                  const uint8_t* const* scale, int64_t experts,
                                  const int64_t* offsets, int64_t out, float* y,
                                  cudaStream_t stream);
// launch_grouped_linear's bf16 / f32 half (linear_dense.cu).
cudaError_t launch_grouped_dense(bool bf16, const float* x, int64_t in, const void* const* w,
                                 int64_t experts, const int64_t* offsets, int64_t out, float* y,
                                 cudaStream_t stream);
// out[t] += sum_k weight[t, k] * results[src[t, k]], k ascending; out [tokens, D].
cudaError_t launch_moe_combine(const float* results, const int64_t* src, const float* weight,
                               int64_t tokens, int64_t K, int64_t D, float* out,
                               cudaStream_t stream);

// Rotates the trailing rope_dim channels of x[tokens, heads, width] (interleaved pairs) by
// positions[t] * inv_freq[i] (inverse: by minus that angle).
cudaError_t launch_rope(float* x, int64_t tokens, int64_t heads, int64_t width, int64_t rope_dim,
                        const int32_t* positions, const float* inv_freq, bool inverse,
                        cudaStream_t stream);

// x[i] *= s for i < count (elementwise.cu).
cudaError_t launch_scale(float* x, int64_t count, float s, cudaStream_t stream);
// out[b, a, c] = x[a, b, c]: x [A, B, C] to out [B, A, C] (elementwise.cu); out must not overlap x.
cudaError_t launch_swap_outer_axes(const float* x, int64_t A, int64_t B, int64_t C, float* out,
                                   cudaStream_t stream);
// out[i] = bf16(x[i]) rounded to nearest even; y[i] = in[i] widened (elementwise.cu).
// The compressors' pooling of a step's closed windows and the rings' row copies
// (compressor_pool.cu; device/device_ops.hpp CompressorWindows says where each row lives):
// window, first_position, first_row, ring_row [count]; kv, gate [T, width]; ring_kv, ring_gate
// [*, width]; entries [count, d]; width = 2d when m == 4, else d.
cudaError_t launch_compress_windows(const int64_t* window, const int64_t* first_position,
                                    const int64_t* first_row, const int64_t* ring_row,
                                    int64_t count, int64_t m, int64_t d, const float* kv,
                                    const float* gate, const float* ring_kv, const float* ring_gate,
                                    float* entries, cudaStream_t stream);
// dst[dst_rows[r]] = src[src_rows[r]], r < rows, rows `width` wide.
cudaError_t launch_copy_rows(const float* src, const int64_t* src_rows, int64_t rows, int64_t width,
                             float* dst, const int64_t* dst_rows, cudaStream_t stream);
cudaError_t launch_round_to_bf16(const float* x, int64_t count, uint16_t* out, cudaStream_t stream);
cudaError_t launch_widen_bf16(const uint16_t* in, int64_t count, float* y, cudaStream_t stream);

}  // namespace tessera::kernels
