// The cuda backend of the device layer: one device of a CUDA device module (core/cuda,
// device_api.h), either the GPU's libtessera_cuda.so or the SIMT emulator's
// libtessera_cuda_emulated.so; the same code drives both. Every call names the device ordinal.
#pragma once

#include "device/device.hpp"
#include "device/device_ops.hpp"
#include "device_api.h"

namespace tessera::device {

class ModuleOps final : public DeviceOps {
 public:
  ModuleOps(const ts_cuda_device_api& api, int32_t ordinal) : api_(api), ordinal_(ordinal) {}
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

 private:
  const ts_cuda_device_api& api_;
  int32_t ordinal_;
};

class CudaDevice final : public Device {
 public:
  // `api` is a loaded module's table (it stays loaded for the life of the process); throws when
  // the ordinal is not one of its devices, naming the module and what it reported.
  CudaDevice(const ts_cuda_device_api& api, int32_t ordinal, std::string module_path);
  ~CudaDevice() override = default;

  [[nodiscard]] DeviceKind kind() const override { return DeviceKind::kCuda; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] bool emulated() const override { return api_.emulated != 0; }
  [[nodiscard]] int32_t ordinal() const override { return ordinal_; }
  [[nodiscard]] uint64_t free_bytes() const override;
  [[nodiscard]] const ts_cuda_device_info& info() const { return info_; }
  [[nodiscard]] const std::string& module_path() const { return module_path_; }
  [[nodiscard]] int32_t device_count() const override;
  [[nodiscard]] DeviceBuffer allocate(size_t bytes) override;
  [[nodiscard]] HostBuffer allocate_host(size_t bytes) override;
  [[nodiscard]] bool page_locked(const void* p) const override;
  [[nodiscard]] Stream create_stream() override;
  [[nodiscard]] Event create_event() override;
  [[nodiscard]] Event create_timing_event() override;
  void copy(void* dst, const void* src, size_t bytes, CopyKind kind, const Stream& stream) override;
  void fill(void* dst, int byte, size_t bytes, const Stream& stream) override;
  void synchronize(const Stream& stream) override;
  void record(const Event& event, const Stream& stream) override;
  void wait(const Stream& stream, const Event& event) override;
  [[nodiscard]] double elapsed_ms(const Event& start, const Event& end) override;
  [[nodiscard]] bool graphs() const override { return true; }
  [[nodiscard]] Graph capture(const Stream& stream, const std::function<void()>& record) override;
  void launch(const Graph& graph, const Stream& stream) override;
  [[nodiscard]] const DeviceOps& ops() const override { return ops_; }

 private:
  void destroy_graph(void* handle) noexcept override;
  void release(void* data) noexcept override;
  void destroy_stream(void* handle) noexcept override;
  void destroy_event(void* handle) noexcept override;
  // Throws "cuda:N (name): what: message" unless s is TS_OK.
  void check(ts_status s, const char* what) const;

  const ts_cuda_device_api& api_;
  int32_t ordinal_;
  std::string module_path_;
  ts_cuda_device_info info_{};
  ModuleOps ops_;
};

}  // namespace tessera::device
