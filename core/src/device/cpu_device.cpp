#include "device/cpu_device.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/linear.hpp"
#include "ops/linear_low_precision.hpp"
#include "ops/moe_grouping.hpp"
#include "ops/norms.hpp"
#include "ops/scan_columns.hpp"
#include "ops/softmax_pool.hpp"
#include "ops/swiglu.hpp"
#include "tessera/plugin_abi.h"
#include "util/check.hpp"
#include "weights/numeric_encoding.hpp"
#include "weights/numeric_formats.hpp"

namespace tessera::device {
// The FP8 and FP4 products (ops/linear_low_precision.hpp): our GEMM on W decoded a few rows at a
// time, the definitions written out where OpenBLAS runs.
void CpuOps::linear_fp8(const Stream&, const float* x, int64_t rows, int64_t in, const uint8_t* w,
                        const uint8_t* w_scale, int64_t out, float* y) const {
  ops::linear_fp8(x, rows, in, w, w_scale, out, y);
}

void CpuOps::linear_fp4(const Stream&, const float* x, int64_t rows, int64_t in, const uint8_t* w,
                        const uint8_t* w_scale, int64_t out, float* y) const {
  ops::linear_fp4(x, rows, in, w, w_scale, out, y);
}

void CpuOps::route_tokens(const Stream&, const ops::MoeRouting& routing, float* scores,
                          int64_t tokens, int32_t* picked, float* weights, int64_t* bad) const {
  *bad = ops::route_tokens(routing, scores, tokens, picked, weights);
}

// The model's mHC on all tokens at once (it runs the same functions per chunk of tokens).
void CpuOps::hc_mix_logits(const Stream&, const float* streams, int64_t tokens, int64_t width,
                           const float* fn, int64_t rows, float eps, float* mix) const {
  ops::linear_strided(streams, tokens, width, width, fn, rows, width, mix, rows);
  for (int64_t t = 0; t < tokens; ++t) {
    const float r = ops::rms_scale(streams + t * width, width, eps);
    for (int64_t i = 0; i < rows; ++i) {
      mix[t * rows + i] *= r;
    }
  }
}

void CpuOps::hc_coefficients(const Stream&, const ops::HcSite& site, const float* mix,
                             int64_t tokens, float* pre, float* post, float* comb) const {
  ops::hc_coefficients(site, mix, 0, tokens, pre, post, comb);
}

void CpuOps::hc_pre_mix(const Stream&, const float* pre, const float* streams, int64_t tokens,
                        int64_t n, int64_t D, float* x) const {
  ops::hc_pre_mix(pre, streams, n, D, 0, tokens, x);
}

void CpuOps::hc_post_mix(const Stream&, const float* post, const float* comb, const float* out,
                         int64_t tokens, int64_t n, int64_t D, float* streams) const {
  ops::hc_post_mix(post, comb, out, n, D, 0, tokens, streams);
}

void CpuOps::hc_head_mix(const Stream&, const float* mix, const float* scale, const float* base,
                         float eps, const float* streams, int64_t tokens, int64_t n, int64_t D,
                         float* y) const {
  ops::hc_head_mix(mix, *scale, base, eps, streams, n, D, 0, tokens, y);
}

void CpuOps::scan_rows(const Stream&, const float* logits, int64_t rows, int64_t vocab,
                       ops::RowScan* scans, float* group_max) const {
  ops::scan_columns(logits, rows, vocab, 0, vocab, {scans, static_cast<size_t>(rows)}, group_max,
                    TS_LOGIT_GROUP_COUNT(vocab));
}

void CpuOps::gather_rows(const Stream&, const float* x, const int64_t* source, int64_t rows,
                         int64_t D, float* gathered) const {
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(x + source[r] * D, D, gathered + r * D);
  }
}

// The combine of model/moe.cpp: per token, dst += w * row for its rows in expert order.
void CpuOps::moe_combine(const Stream&, const float* results, const int64_t* src,
                         const float* weight, int64_t tokens, int64_t K, int64_t D,
                         float* out) const {
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t i = 0; i < D; ++i) {
        out[t * D + i] += weight[t * K + k] * results[src[t * K + k] * D + i];
      }
    }
  }
}

void CpuOps::moe_group(const Stream&, const int32_t* picked, const float* weight, int64_t tokens,
                       int64_t K, int64_t E, int64_t* offsets, int64_t* source, int64_t* src,
                       float* combine_weight) const {
  ops::group_routed_rows(picked, weight, tokens, K, E, offsets, source, src, combine_weight);
}

void CpuOps::grouped_linear(const Stream& stream, LinearFormat format, const float* x, int64_t in,
                            const void* const* weights, const uint8_t* const* scales,
                            int64_t experts, const int64_t* offsets, int64_t out, float* y) const {
  if (format == LinearFormat::kFp8 || format == LinearFormat::kFp4) {
    // One pass over every expert's tiles (ops/linear_low_precision.hpp).
    std::vector<const uint8_t*> w(static_cast<size_t>(experts));
    for (int64_t e = 0; e < experts; ++e) {
      w[static_cast<size_t>(e)] = static_cast<const uint8_t*>(weights[e]);
    }
    if (format == LinearFormat::kFp8) {
      ops::grouped_linear_fp8(x, in, w.data(), scales, experts, offsets, out, y);
    } else {
      ops::grouped_linear_fp4(x, in, w.data(), scales, experts, offsets, out, y);
    }
    return;
  }
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t first = offsets[e], rows = offsets[e + 1] - first;
    if (rows <= 0) {
      continue;
    }
    if (format == LinearFormat::kBf16) {
      linear_bf16(stream, x + first * in, rows, in, static_cast<const uint16_t*>(weights[e]), out,
                  y + first * out);
    } else {
      linear_f32(stream, x + first * in, rows, in, static_cast<const float*>(weights[e]), out,
                 y + first * out);
    }
  }
}

void CpuOps::rms_norm(const Stream&, float* x, int64_t rows, int64_t width, const float* weight,
                      float eps) const {
  if (weight != nullptr) {
    ops::rms_norm(x, rows, width, weight, eps);
  } else {
    ops::rms_norm_unweighted(x, rows, width, eps);
  }
}

void CpuOps::rms_norm_bf16(const Stream& stream, float* x, int64_t rows, int64_t width,
                           const uint16_t* weight, float eps) const {
  std::vector<float> widened(static_cast<size_t>(width));
  for (int64_t i = 0; i < width; ++i) {
    widened[i] = weights::bf16_to_f32(weight[i]);
  }
  rms_norm(stream, x, rows, width, widened.data(), eps);
}

void CpuOps::swiglu(const Stream&, float* g, const float* u, int64_t count, float limit) const {
  ops::swiglu(g, u, count, limit);
}

void CpuOps::embed_bf16(const Stream&, const uint16_t* table, int64_t width, const int32_t* ids,
                        int64_t rows, int64_t copies, float* out) const {
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t c = 0; c < copies; ++c) {
      for (int64_t i = 0; i < width; ++i) {
        out[(t * copies + c) * width + i] = weights::bf16_to_f32(table[ids[t] * width + i]);
      }
    }
  }
}

void CpuOps::linear_bf16(const Stream&, const float* x, int64_t rows, int64_t in, const uint16_t* w,
                         int64_t out, float* y) const {
  ops::GemmNtArgs a{x, rows, in, in, nullptr, out, in, y, out};
  a.w_bf16 = w;
  ops::linear_group({&a, 1});
}

void CpuOps::embed_f32(const Stream&, const float* table, int64_t width, const int32_t* ids,
                       int64_t rows, int64_t copies, float* out) const {
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t c = 0; c < copies; ++c) {
      std::copy_n(table + ids[t] * width, width, out + (t * copies + c) * width);
    }
  }
}

void CpuOps::linear_f32(const Stream&, const float* x, int64_t rows, int64_t in, const float* w,
                        int64_t out, float* y) const {
  ops::GemmNtArgs a{x, rows, in, in, w, out, in, y, out};
  ops::linear_group({&a, 1});
}

void CpuOps::scale(const Stream&, float* x, int64_t count, float s) const {
  for (int64_t i = 0; i < count; ++i) {
    x[i] *= s;
  }
}

void CpuOps::swap_outer_axes(const Stream&, const float* x, int64_t A, int64_t B, int64_t C,
                             float* out) const {
  for (int64_t a = 0; a < A; ++a) {
    for (int64_t b = 0; b < B; ++b) {
      std::copy_n(x + (a * B + b) * C, C, out + (b * A + a) * C);
    }
  }
}

void CpuOps::round_to_bf16(const Stream&, const float* x, int64_t count, uint16_t* out) const {
  for (int64_t i = 0; i < count; ++i) {
    out[i] = weights::f32_to_bf16(x[i]);
  }
}

void CpuOps::widen_bf16(const Stream&, const uint16_t* in, int64_t count, float* y) const {
  for (int64_t i = 0; i < count; ++i) {
    y[i] = weights::bf16_to_f32(in[i]);
  }
}

// Each window's rows gathered from the step or the ring, then dsv4::softmax_pool over them as
// kv/compressor_state.cpp pools them (the current window's rows, then the previous window's).
void CpuOps::compress_windows(const Stream&, const CompressorWindows& w, const float* kv,
                              const float* gate, const float* ring_kv, const float* ring_gate,
                              float* entries) const {
  const int64_t m = w.ratio, d = w.dim;
  const bool overlap = m == 4;
  const int64_t width = overlap ? 2 * d : d, windows = overlap ? 2 : 1;
  std::vector<float> rows_kv(static_cast<size_t>(2 * m * width));
  std::vector<float> rows_gate(rows_kv.size());
  for (int64_t i = 0; i < w.count; ++i) {
    const int64_t k = w.window[i];
    if (k < 0) {
      continue;  // a padding window: its entry is left as it was
    }
    const int64_t first = (overlap && k > 0 ? k - 1 : k) * m;  // rows [first, (k + 1) m)
    for (int64_t p = first; p < (k + 1) * m; ++p) {
      const bool in_step = p >= w.first_position[i];
      const int64_t row = in_step ? w.first_row[i] + p - w.first_position[i]
                                  : w.ring_row[i] + (p / m % windows) * m + p % m;
      const int64_t at = (p - first) * width;
      std::copy_n((in_step ? kv : ring_kv) + row * width, width, rows_kv.data() + at);
      std::copy_n((in_step ? gate : ring_gate) + row * width, width, rows_gate.data() + at);
    }
    const int64_t current = (k * m - first) * width + (overlap ? d : 0);
    const dsv4::PoolRows parts[2] = {
        {rows_kv.data() + current, rows_gate.data() + current, m, width},
        {rows_kv.data(), rows_gate.data(), m, width}};
    dsv4::softmax_pool(std::span<const dsv4::PoolRows>(parts, first < k * m ? 2 : 1), d,
                       entries + i * d);
  }
}

void CpuOps::copy_rows(const Stream&, const float* src, const int64_t* src_rows, int64_t rows,
                       int64_t width, float* dst, const int64_t* dst_rows) const {
  for (int64_t i = 0; i < rows; ++i) {
    if (dst_rows[i] >= 0) {  // a negative one: a padding row
      std::copy_n(src + src_rows[i] * width, width, dst + dst_rows[i] * width);
    }
  }
}

// The rotation of ops::RopeTable::apply, per token at its own position.
void CpuOps::rope(const Stream&, float* x, int64_t tokens, int64_t heads, int64_t width,
                  int64_t rope_dim, const int32_t* positions, const float* inv_freq,
                  bool inverse) const {
  const int64_t half = rope_dim / 2;
  std::vector<float> cos(static_cast<size_t>(half)), sin(cos.size());
  for (int64_t t = 0; t < tokens; ++t) {
    const auto pos = static_cast<float>(positions[t]);
    for (int64_t i = 0; i < half; ++i) {
      const float angle = pos * inv_freq[i];
      cos[i] = std::cos(angle);
      sin[i] = inverse ? -std::sin(angle) : std::sin(angle);
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* pairs = x + (t * heads + h) * width + (width - rope_dim);
      for (int64_t i = 0; i < half; ++i) {
        const float a = pairs[2 * i], b = pairs[2 * i + 1];
        pairs[2 * i] = a * cos[i] - b * sin[i];
        pairs[2 * i + 1] = b * cos[i] + a * sin[i];
      }
    }
  }
}

uint64_t CpuDevice::free_bytes() const {
  return static_cast<uint64_t>(sysconf(_SC_AVPHYS_PAGES)) *
         static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

namespace {

// 256-byte aligned, as cudaMalloc; released with std::free.
void* aligned_heap(size_t bytes) {
  constexpr size_t kAlign = 256;
  const size_t rounded = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (p == nullptr) {
    throw std::runtime_error("cpu: cannot allocate " + std::to_string(bytes) + " bytes");
  }
  return p;
}

}  // namespace

DeviceBuffer CpuDevice::allocate(size_t bytes) {
  return DeviceBuffer(this, aligned_heap(bytes), bytes);
}

HostBuffer CpuDevice::allocate_host(size_t bytes) {
  return HostBuffer(static_cast<std::byte*>(aligned_heap(bytes)),
                    HostRelease{[](const void*, void* m) noexcept { std::free(m); }, nullptr});
}

void CpuDevice::copy(void* dst, const void* src, size_t bytes, CopyKind, const Stream&) {
  std::memcpy(dst, src, bytes);
}

void CpuDevice::fill(void* dst, int byte, size_t bytes, const Stream&) {
  std::memset(dst, byte, bytes);
}

void CpuDevice::release(void* data) noexcept { std::free(data); }

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

Event CpuDevice::create_timing_event() { return Event(this, new Clock::time_point()); }

void CpuDevice::record(const Event& event, const Stream&) {
  if (event.handle() != nullptr) {
    *static_cast<Clock::time_point*>(event.handle()) = Clock::now();
  }
}

double CpuDevice::elapsed_ms(const Event& start, const Event& end) {
  if (start.handle() == nullptr || end.handle() == nullptr) {
    throw std::invalid_argument("cpu elapsed_ms: give events made by create_timing_event()");
  }
  return std::chrono::duration<double, std::milli>(
             *static_cast<const Clock::time_point*>(end.handle()) -
             *static_cast<const Clock::time_point*>(start.handle()))
      .count();
}

void CpuDevice::destroy_event(void* handle) noexcept {
  delete static_cast<Clock::time_point*>(handle);
}

}  // namespace tessera::device
