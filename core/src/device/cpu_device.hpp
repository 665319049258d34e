// The cpu backend of the device layer: host memory, work runs at once on the calling thread
// (and the compute threads the ops use), the ops are today's CPU ops (src/ops): the oracle.
#pragma once

#include "device/device.hpp"
#include "device/device_ops.hpp"

namespace tessera::device {

class CpuOps final : public DeviceOps {
 public:
  void rms_norm(const Stream& stream, float* x, int64_t rows, int64_t width, const float* weight,
                float eps) const override;
  void rms_norm_bf16(const Stream& stream, float* x, int64_t rows, int64_t width,
                     const uint16_t* weight, float eps) const override;
  void swiglu(const Stream& stream, float* g, const float* u, int64_t count,
              float limit) const override;
  void embed_bf16(const Stream& stream, const uint16_t* table, int64_t width, const int32_t* ids,
                  int64_t rows, int64_t copies, float* out) const override;
  void linear_bf16(const Stream& stream, const float* x, int64_t rows, int64_t in,
                   const uint16_t* w, int64_t out, float* y) const override;
  void linear_fp8(const Stream& stream, const float* x, int64_t rows, int64_t in, const uint8_t* w,
                  const uint8_t* w_scale, int64_t out, float* y) const override;
  void linear_fp4(const Stream& stream, const float* x, int64_t rows, int64_t in, const uint8_t* w,
                  const uint8_t* w_scale, int64_t out, float* y) const override;
  void route_tokens(const Stream& stream, const ops::MoeRouting& routing, float* scores,
                    int64_t tokens, int32_t* picked, float* weights, int64_t* bad) const override;
  void hc_mix_logits(const Stream& stream, const float* streams, int64_t tokens, int64_t width,
                     const float* fn, int64_t rows, float eps, float* mix) const override;
  void hc_coefficients(const Stream& stream, const ops::HcSite& site, const float* mix,
                       int64_t tokens, float* pre, float* post, float* comb) const override;
  void hc_pre_mix(const Stream& stream, const float* pre, const float* streams, int64_t tokens,
                  int64_t n, int64_t D, float* x) const override;
  void hc_post_mix(const Stream& stream, const float* post, const float* comb, const float* out,
                   int64_t tokens, int64_t n, int64_t D, float* streams) const override;
  void hc_head_mix(const Stream& stream, const float* mix, const float* scale, const float* base,
                   float eps, const float* streams, int64_t tokens, int64_t n, int64_t D,
                   float* y) const override;
  void scan_rows(const Stream& stream, const float* logits, int64_t rows, int64_t vocab,
                 ops::RowScan* scans, float* group_max) const override;
  void gather_rows(const Stream& stream, const float* x, const int64_t* source, int64_t rows,
                   int64_t D, float* gathered) const override;
  void moe_combine(const Stream& stream, const float* results, const int64_t* src,
                   const float* weight, int64_t tokens, int64_t K, int64_t D,
                   float* out) const override;
  void moe_group(const Stream& stream, const int32_t* picked, const float* weight, int64_t tokens,
                 int64_t K, int64_t E, int64_t* offsets, int64_t* source, int64_t* src,
                 float* combine_weight) const override;
  void grouped_linear(const Stream& stream, LinearFormat format, const float* x, int64_t in,
                      const void* const* weights, const uint8_t* const* scales, int64_t experts,
                      const int64_t* offsets, int64_t out, float* y) const override;
  void rope(const Stream& stream, float* x, int64_t tokens, int64_t heads, int64_t width,
            int64_t rope_dim, const int32_t* positions, const float* inv_freq,
            bool inverse) const override;
  void embed_f32(const Stream& stream, const float* table, int64_t width, const int32_t* ids,
                 int64_t rows, int64_t copies, float* out) const override;
  void linear_f32(const Stream& stream, const float* x, int64_t rows, int64_t in, const float* w,
                  int64_t out, float* y) const override;
  void scale(const Stream& stream, float* x, int64_t count, float s) const override;
  void swap_outer_axes(const Stream& stream, const float* x, int64_t A, int64_t B, int64_t C,
                       float* out) const override;
  void round_to_bf16(const Stream& stream, const float* x, int64_t count,
                     uint16_t* out) const override;
  void widen_bf16(const Stream& stream, const uint16_t* in, int64_t count, float* y) const override;
  void compress_windows(const Stream& stream, const CompressorWindows& windows, const float* kv,
                        const float* gate, const float* ring_kv, const float* ring_gate,
                        float* entries) const override;
  void copy_rows(const Stream& stream, const float* src, const int64_t* src_rows, int64_t rows,
                 int64_t width, float* dst, const int64_t* dst_rows) const override;
};

// Not final: a test may count its synchronisations (device_compressor_rings_test).
class CpuDevice : public Device {
 public:
  [[nodiscard]] DeviceKind kind() const override { return DeviceKind::kCpu; }
  [[nodiscard]] std::string describe() const override { return "cpu"; }
  [[nodiscard]] uint64_t free_bytes() const override;
  [[nodiscard]] DeviceBuffer allocate(size_t bytes) override;
  [[nodiscard]] Stream create_stream() override { return Stream(this, nullptr); }
  [[nodiscard]] Event create_event() override { return Event(this, nullptr); }
  // Work on the CPU is done when it returns: a timing event holds the time it was recorded.
  [[nodiscard]] Event create_timing_event() override;
  // The heap: the CPU has nothing to page-lock for.
  [[nodiscard]] HostBuffer allocate_host(size_t bytes) override;
  [[nodiscard]] bool page_locked(const void*) const override { return false; }
  void copy(void* dst, const void* src, size_t bytes, CopyKind kind, const Stream& stream) override;
  void fill(void* dst, int byte, size_t bytes, const Stream& stream) override;
  void synchronize(const Stream&) override {}
  void record(const Event& event, const Stream&) override;
  void wait(const Stream&, const Event&) override {}
  [[nodiscard]] double elapsed_ms(const Event& start, const Event& end) override;
  [[nodiscard]] const DeviceOps& ops() const override { return ops_; }

 private:
  void release(void* data) noexcept override;
  void destroy_stream(void*) noexcept override {}
  void destroy_event(void* handle) noexcept override;
  CpuOps ops_;
};

}  // namespace tessera::device
