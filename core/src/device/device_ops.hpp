// The ops of the forward, one implementation per backend (ggml's backends; the cpu one is the
// oracle every other is tested against in tests/device/device_ops_test.cpp). Pointers are memory
// of the op's device; work is ordered on `stream`. Shapes follow each op; every value is fp32
// unless named otherwise. Tolerances against the cpu backend are stated in docs/cuda.md.
#pragma once

#include <cstdint>

#include "ops/hyper_mix.hpp"
#include "ops/moe_routing.hpp"
#include "ops/row_scan.hpp"

namespace tessera::device {

class Stream;

// How a linear weight is stored (DeviceOps::linear_* for one weight; grouped_linear for many).
enum class LinearFormat : int32_t { kBf16 = 0, kF32 = 1, kFp8 = 2, kFp4 = 3 };

// A step's closed compressor windows (kv/compressor_state.hpp has the pooling), for
// DeviceOps::compress_windows. Window i covers positions k*m .. k*m+m-1, k = window[i]. A
// position p at or after first_position[i] is the step's row first_row[i] + p - first_position[i];
// an earlier one is in the sequence's ring, which holds the last `windows` windows from row
// ring_row[i] on: row ring_row[i] + (p / m % windows) * m + p % m, windows = 2 when m == 4
// (overlapping: the previous window's first half joins, except for k = 0), else 1. The index
// arrays [count] are memory of the op's device. A negative window[i] is padding (a graph
// bucket's fixed count): entry i is left as it was.
struct CompressorWindows {
  int64_t count = 0;
  int64_t ratio = 0;  // m
  int64_t dim = 0;    // d, an entry's width; a row is 2d wide when m == 4, else d
  const int64_t* window = nullptr;
  const int64_t* first_position = nullptr;
  const int64_t* first_row = nullptr;
  const int64_t* ring_row = nullptr;
};

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;

  // x[rows, width] = weight[width] * x * rsqrt(mean(x^2) + eps), in place (weight null: none).
  virtual void rms_norm(const Stream& stream, float* x, int64_t rows, int64_t width,
                        const float* weight, float eps) const = 0;
  // rms_norm with the weight [width] in bf16, as checkpoints store norms.
  virtual void rms_norm_bf16(const Stream& stream, float* x, int64_t rows, int64_t width,
                             const uint16_t* weight, float eps) const = 0;
  // g[i] = silu(min(g[i], limit)) * clamp(u[i], -limit, limit), i < count (limit 0: no clamp).
  virtual void swiglu(const Stream& stream, float* g, const float* u, int64_t count,
                      float limit) const = 0;
  // out[t, c, :] = widen(table[ids[t], :]) for c < copies; table [vocab, width] bf16.
  virtual void embed_bf16(const Stream& stream, const uint16_t* table, int64_t width,
                          const int32_t* ids, int64_t rows, int64_t copies, float* out) const = 0;
  // The same from an fp32 table.
  virtual void embed_f32(const Stream& stream, const float* table, int64_t width,
                         const int32_t* ids, int64_t rows, int64_t copies, float* out) const = 0;
  // y[rows, out] = x[rows, in] . W^T; W [out, in] bf16.
  virtual void linear_bf16(const Stream& stream, const float* x, int64_t rows, int64_t in,
                           const uint16_t* w, int64_t out, float* y) const = 0;
  // The same with W in fp32.
  virtual void linear_f32(const Stream& stream, const float* x, int64_t rows, int64_t in,
                          const float* w, int64_t out, float* y) const = 0;
  // y[rows, out] = x . W^T as DeepSeek-V4's FP8 layers (W8A8): W [out, in] e4m3 with w_scale
  // [ceil(out/128), ceil(in/128)] UE8M0; x quantised to e4m3 per 1x128 block with a power-of-two
  // scale (core/cuda/kernels/number_formats.cuh); fp32 sums per block, scaled by both scales.
  virtual void linear_fp8(const Stream& stream, const float* x, int64_t rows, int64_t in,
                          const uint8_t* w, const uint8_t* w_scale, int64_t out,
                          float* y) const = 0;
  // The same activations against W [out, in / 2] packed e2m1 (low nibble first) with w_scale
  // [out, in / 32] UE8M0 (the routed experts); in % 32 == 0.
  virtual void linear_fp4(const Stream& stream, const float* x, int64_t rows, int64_t in,
                          const uint8_t* w, const uint8_t* w_scale, int64_t out,
                          float* y) const = 0;
  // The MoE router (ops/moe_routing.hpp): scores [tokens, E] router logits, replaced by
  // sqrt(softplus); picked and weights [tokens, K]. routing's pointers are memory of this device.
  // *bad (device memory) receives the lowest token whose routing failed, or `tokens`: read it
  // after the stream is synchronised.
  virtual void route_tokens(const Stream& stream, const ops::MoeRouting& routing, float* scores,
                            int64_t tokens, int32_t* picked, float* weights,
                            int64_t* bad) const = 0;
  // The MoE's routed rows: gathered[r] = x[source[r]] (x [tokens, D], gathered [rows, D]); and
  // the combine: out[t] += sum_k weight[t, k] * results[src[t, k]], k ascending (the experts'
  // order), into the shared expert's output out [tokens, D]; src, weight [tokens, K].
  virtual void gather_rows(const Stream& stream, const float* x, const int64_t* source,
                           int64_t rows, int64_t D, float* gathered) const = 0;
  virtual void moe_combine(const Stream& stream, const float* results, const int64_t* src,
                           const float* weight, int64_t tokens, int64_t K, int64_t D,
                           float* out) const = 0;
  // The routed rows grouped by expert on this device (ops/moe_grouping.hpp): picked, weight
  // [tokens, K] -> offsets [E + 1], source, src, combine_weight [tokens * K].
  virtual void moe_group(const Stream& stream, const int32_t* picked, const float* weight,
                         int64_t tokens, int64_t K, int64_t E, int64_t* offsets, int64_t* source,
                         int64_t* src, float* combine_weight) const = 0;
  // Every expert's product over its rows, one launch: y[r] = x[r] . W_e^T for rows r in
  // [offsets[e], offsets[e + 1]) (offsets: this device's memory), e < experts; weights and
  // scales: arrays (this device's memory) of `experts` pointers to [out, in] weights of `format`
  // (scales as linear_fp8 / linear_fp4 take them; null entries for bf16 / f32).
  virtual void grouped_linear(const Stream& stream, LinearFormat format, const float* x, int64_t in,
                              const void* const* weights, const uint8_t* const* scales,
                              int64_t experts, const int64_t* offsets, int64_t out,
                              float* y) const = 0;
  // The mHC mixes (ops/hyper_mix.hpp): the site's logits mix [T, rows] =
  // (streams[t] . fn^T) * rsqrt(mean(streams[t]^2) + eps) from streams [T, width] and fn
  // [rows, width] fp32; the coefficients pre, post [T, n] and comb [T, n, n] from them (site's
  // pointers in this device's memory); x [T, D] = sum_k pre_k streams_k; the streams [T, n, D]
  // updated from the block's output out [T, D]; the head's y [T, D] from its mix [T, n] (scale:
  // one value in this device's memory).
  virtual void hc_mix_logits(const Stream& stream, const float* streams, int64_t tokens,
                             int64_t width, const float* fn, int64_t rows, float eps,
                             float* mix) const = 0;
  virtual void hc_coefficients(const Stream& stream, const ops::HcSite& site, const float* mix,
                               int64_t tokens, float* pre, float* post, float* comb) const = 0;
  virtual void hc_pre_mix(const Stream& stream, const float* pre, const float* streams,
                          int64_t tokens, int64_t n, int64_t D, float* x) const = 0;
  virtual void hc_post_mix(const Stream& stream, const float* post, const float* comb,
                           const float* out, int64_t tokens, int64_t n, int64_t D,
                           float* streams) const = 0;
  virtual void hc_head_mix(const Stream& stream, const float* mix, const float* scale,
                           const float* base, float eps, const float* streams, int64_t tokens,
                           int64_t n, int64_t D, float* y) const = 0;
  // The vocabulary head's scans of logits [rows, vocab] (ops/row_scan.hpp): scans [rows] and,
  // when group_max is not null, group_max [rows, TS_LOGIT_GROUP_COUNT(vocab)], in this device's
  // memory (what the sampler plugin is handed beside the logits).
  virtual void scan_rows(const Stream& stream, const float* logits, int64_t rows, int64_t vocab,
                         ops::RowScan* scans, float* group_max) const = 0;
  // Rotates the trailing rope_dim channels of x[tokens, heads, width] by positions[t] *
  // inv_freq[i] (interleaved pairs; inverse: the opposite angle). positions [tokens] int32,
  // inv_freq [rope_dim / 2].
  virtual void rope(const Stream& stream, float* x, int64_t tokens, int64_t heads, int64_t width,
                    int64_t rope_dim, const int32_t* positions, const float* inv_freq,
                    bool inverse) const = 0;
  // x[i] *= s, i < count.
  virtual void scale(const Stream& stream, float* x, int64_t count, float s) const = 0;
  // out[b, a, c] = x[a, b, c]: x [A, B, C] to out [B, A, C]; out does not overlap x.
  virtual void swap_outer_axes(const Stream& stream, const float* x, int64_t A, int64_t B,
                               int64_t C, float* out) const = 0;
  // out[i] = bf16(x[i]), round to nearest even; y[i] = in[i] widened to fp32 (exact). The bf16
  // collectives' casts (model/device_model.cpp).
  virtual void round_to_bf16(const Stream& stream, const float* x, int64_t count,
                             uint16_t* out) const = 0;
  virtual void widen_bf16(const Stream& stream, const uint16_t* in, int64_t count,
                          float* y) const = 0;
  // The compressors' pooling of a step's closed windows: entries [count, d] from the step's kv
  // and gate rows [T, width] (ape added) and the rings' rows [*, width] (CompressorWindows),
  // each entry's channel j as softmax_pool (ops/softmax_pool.hpp) sums it: current window's rows
  // (channels d + j when overlapping), then the previous window's (channel j), in position order.
  virtual void compress_windows(const Stream& stream, const CompressorWindows& windows,
                                const float* kv, const float* gate, const float* ring_kv,
                                const float* ring_gate, float* entries) const = 0;
  // dst[dst_rows[i]] = src[src_rows[i]], i < rows, rows `width` wide (the compressors' rings:
  // each sequence's last window rows kept for the next step); no two dst_rows >= 0 equal, a
  // negative one is a padding row, skipped.
  virtual void copy_rows(const Stream& stream, const float* src, const int64_t* src_rows,
                         int64_t rows, int64_t width, float* dst,
                         const int64_t* dst_rows) const = 0;
};

}  // namespace tessera::device
