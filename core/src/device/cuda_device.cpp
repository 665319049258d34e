#include "device/cuda_device.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace tessera::device {
namespace {

std::string message_of(ts_status s) { return s.message != nullptr ? s.message : "(no message)"; }

// Throws "op: message" unless s is TS_OK (the ops' errors, named by the op).
void check_op(ts_status s, const char* op) {
  if (s.code != TS_OK) throw std::runtime_error(fmt::format("{}: {}", op, message_of(s)));
}

}  // namespace

void ModuleOps::rms_norm(const Stream& stream, float* x, int64_t rows, int64_t width,
                         const float* weight, float eps) const {
  check_op(api_.rms_norm(ordinal_, stream.handle(), x, rows, width, weight, eps), "rms_norm");
}

void ModuleOps::rms_norm_bf16(const Stream& stream, float* x, int64_t rows, int64_t width,
                              const uint16_t* weight, float eps) const {
  check_op(api_.rms_norm_bf16(ordinal_, stream.handle(), x, rows, width, weight, eps),
           "rms_norm_bf16");
}

void ModuleOps::swiglu(const Stream& stream, float* g, const float* u, int64_t count,
                       float limit) const {
  check_op(api_.swiglu(ordinal_, stream.handle(), g, u, count, limit), "swiglu");
}

void ModuleOps::embed_bf16(const Stream& stream, const uint16_t* table, int64_t width,
                           const int32_t* ids, int64_t rows, int64_t copies, float* out) const {
  check_op(api_.embed_bf16(ordinal_, stream.handle(), table, width, ids, rows, copies, out),
           "embed_bf16");
}

void ModuleOps::linear_bf16(const Stream& stream, const float* x, int64_t rows, int64_t in,
                            const uint16_t* w, int64_t out, float* y) const {
  check_op(api_.linear_bf16(ordinal_, stream.handle(), x, rows, in, w, out, y), "linear_bf16");
}

void ModuleOps::linear_fp8(const Stream& stream, const float* x, int64_t rows, int64_t in,
                           const uint8_t* w, const uint8_t* w_scale, int64_t out, float* y) const {
  check_op(api_.linear_fp8(ordinal_, stream.handle(), x, rows, in, w, w_scale, out, y),
           "linear_fp8");
}

void ModuleOps::linear_fp4(const Stream& stream, const float* x, int64_t rows, int64_t in,
                           const uint8_t* w, const uint8_t* w_scale, int64_t out, float* y) const {
  check_op(api_.linear_fp4(ordinal_, stream.handle(), x, rows, in, w, w_scale, out, y),
           "linear_fp4");
}

void ModuleOps::route_tokens(const Stream& stream, const ops::MoeRouting& routing, float* scores,
                             int64_t tokens, int32_t* picked, float* weights, int64_t* bad) const {
  check_op(api_.moe_routing(ordinal_, stream.handle(), scores, tokens, routing.experts,
                            routing.per_token, routing.bias, routing.tid2eid, routing.table_size,
                            routing.token_ids, routing.scaling, picked, weights, bad),
           "moe_routing");
}

void ModuleOps::hc_mix_logits(const Stream& stream, const float* streams, int64_t tokens,
                              int64_t width, const float* fn, int64_t rows, float eps,
                              float* mix) const {
  check_op(
      api_.hc_mix_logits(ordinal_, stream.handle(), streams, tokens, width, fn, rows, eps, mix),
      "hc_mix_logits");
}

void ModuleOps::hc_coefficients(const Stream& stream, const ops::HcSite& site, const float* mix,
                                int64_t tokens, float* pre, float* post, float* comb) const {
  check_op(api_.hc_coefficients(ordinal_, stream.handle(), mix, tokens, site.n, site.scale,
                                site.base, site.sinkhorn_iters, site.eps, pre, post, comb),
           "hc_coefficients");
}

void ModuleOps::hc_pre_mix(const Stream& stream, const float* pre, const float* streams,
                           int64_t tokens, int64_t n, int64_t D, float* x) const {
  check_op(api_.hc_pre_mix(ordinal_, stream.handle(), pre, streams, tokens, n, D, x), "hc_pre_mix");
}

void ModuleOps::hc_post_mix(const Stream& stream, const float* post, const float* comb,
                            const float* out, int64_t tokens, int64_t n, int64_t D,
                            float* streams) const {
  check_op(api_.hc_post_mix(ordinal_, stream.handle(), post, comb, out, tokens, n, D, streams),
           "hc_post_mix");
}

void ModuleOps::hc_head_mix(const Stream& stream, const float* mix, const float* scale,
                            const float* base, float eps, const float* streams, int64_t tokens,
                            int64_t n, int64_t D, float* y) const {
  check_op(
      api_.hc_head_mix(ordinal_, stream.handle(), mix, scale, base, eps, streams, tokens, n, D, y),
      "hc_head_mix");
}

void ModuleOps::scan_rows(const Stream& stream, const float* logits, int64_t rows, int64_t vocab,
                          ops::RowScan* scans, float* group_max) const {
  check_op(api_.row_scan(ordinal_, stream.handle(), logits, rows, vocab, scans, group_max),
           "row_scan");
}

void ModuleOps::gather_rows(const Stream& stream, const float* x, const int64_t* source,
                            int64_t rows, int64_t D, float* gathered) const {
  check_op(api_.gather_rows(ordinal_, stream.handle(), x, source, rows, D, gathered),
           "gather_rows");
}

void ModuleOps::moe_group(const Stream& stream, const int32_t* picked, const float* weight,
                          int64_t tokens, int64_t K, int64_t E, int64_t* offsets, int64_t* source,
                          int64_t* src, float* combine_weight) const {
  check_op(api_.moe_group(ordinal_, stream.handle(), picked, weight, tokens, K, E, offsets, source,
                          src, combine_weight),
           "moe_group");
}

void ModuleOps::grouped_linear(const Stream& stream, LinearFormat format, const float* x,
                               int64_t in, const void* const* weights, const uint8_t* const* scales,
                               int64_t experts, const int64_t* offsets, int64_t out,
                               float* y) const {
  check_op(api_.grouped_linear(ordinal_, stream.handle(), static_cast<int32_t>(format), x, in,
                               weights, scales, experts, offsets, out, y),
           "grouped_linear");
}

void ModuleOps::moe_combine(const Stream& stream, const float* results, const int64_t* src,
                            const float* weight, int64_t tokens, int64_t K, int64_t D,
                            float* out) const {
  check_op(api_.moe_combine(ordinal_, stream.handle(), results, src, weight, tokens, K, D, out),
           "moe_combine");
}

void ModuleOps::rope(const Stream& stream, float* x, int64_t tokens, int64_t heads, int64_t width,
                     int64_t rope_dim, const int32_t* positions, const float* inv_freq,
                     bool inverse) const {
  check_op(api_.rope(ordinal_, stream.handle(), x, tokens, heads, width, rope_dim, positions,
                     inv_freq, inverse ? 1 : 0),
           "rope");
}

void ModuleOps::embed_f32(const Stream& stream, const float* table, int64_t width,
                          const int32_t* ids, int64_t rows, int64_t copies, float* out) const {
  check_op(api_.embed_f32(ordinal_, stream.handle(), table, width, ids, rows, copies, out),
           "embed_f32");
}

void ModuleOps::linear_f32(const Stream& stream, const float* x, int64_t rows, int64_t in,
                           const float* w, int64_t out, float* y) const {
  check_op(api_.linear_f32(ordinal_, stream.handle(), x, rows, in, w, out, y), "linear_f32");
}

void ModuleOps::scale(const Stream& stream, float* x, int64_t count, float s) const {
  check_op(api_.scale(ordinal_, stream.handle(), x, count, s), "scale");
}

void ModuleOps::swap_outer_axes(const Stream& stream, const float* x, int64_t A, int64_t B,
                                int64_t C, float* out) const {
  check_op(api_.swap_outer_axes(ordinal_, stream.handle(), x, A, B, C, out), "swap_outer_axes");
}

void ModuleOps::round_to_bf16(const Stream& stream, const float* x, int64_t count,
                              uint16_t* out) const {
  check_op(api_.round_to_bf16(ordinal_, stream.handle(), x, count, out), "round_to_bf16");
}

void ModuleOps::widen_bf16(const Stream& stream, const uint16_t* in, int64_t count,
                           float* y) const {
  check_op(api_.widen_bf16(ordinal_, stream.handle(), in, count, y), "widen_bf16");
}

void ModuleOps::compress_windows(const Stream& stream, const CompressorWindows& w, const float* kv,
                                 const float* gate, const float* ring_kv, const float* ring_gate,
                                 float* entries) const {
  check_op(api_.compress_windows(ordinal_, stream.handle(), w.window, w.first_position, w.first_row,
                                 w.ring_row, w.count, w.ratio, w.dim, kv, gate, ring_kv, ring_gate,
                                 entries),
           "compress_windows");
}

void ModuleOps::copy_rows(const Stream& stream, const float* src, const int64_t* src_rows,
                          int64_t rows, int64_t width, float* dst, const int64_t* dst_rows) const {
  check_op(api_.copy_rows(ordinal_, stream.handle(), src, src_rows, rows, width, dst, dst_rows),
           "copy_rows");
}

CudaDevice::CudaDevice(const ts_cuda_device_api& api, int32_t ordinal, std::string module_path)
    : api_(api), ordinal_(ordinal), module_path_(std::move(module_path)), ops_(api, ordinal) {
  int32_t count = 0;
  if (const ts_status s = api_.device_count(&count); s.code != TS_OK)
    throw std::runtime_error(
        fmt::format("device cuda:{}: {} (module {})", ordinal, message_of(s), module_path_));
  if (ordinal < 0 || ordinal >= count)
    throw std::runtime_error(fmt::format("device cuda:{} does not exist: {} reports {} device(s)",
                                         ordinal, module_path_, count));
  if (const ts_status s = api_.describe(ordinal, &info_); s.code != TS_OK)
    throw std::runtime_error(
        fmt::format("device cuda:{}: cannot describe it: {}", ordinal, message_of(s)));
}

int32_t CudaDevice::device_count() const {
  int32_t count = 0;
  check(api_.device_count(&count), "device_count");
  return count;
}

std::string CudaDevice::describe() const {
  return fmt::format("cuda:{} {} (sm_{}{}, {:.1f} GiB, {} SMs{})", ordinal_, info_.name,
                     info_.compute_major, info_.compute_minor,
                     static_cast<double>(info_.total_bytes) / (1u << 30), info_.multiprocessors,
                     emulated() ? ", emulated" : "");
}

uint64_t CudaDevice::free_bytes() const {
  ts_cuda_device_info now{};
  return api_.describe(ordinal_, &now).code == TS_OK ? now.free_bytes : 0;
}

void CudaDevice::check(ts_status s, const char* what) const {
  if (s.code != TS_OK)
    throw std::runtime_error(
        fmt::format("cuda:{} ({}): {}: {}", ordinal_, info_.name, what, message_of(s)));
}

DeviceBuffer CudaDevice::allocate(size_t bytes) {
  void* p = nullptr;
  const ts_status s = api_.allocate(ordinal_, bytes, &p);
  if (s.code != TS_OK)
    throw std::runtime_error(
        fmt::format("cuda:{} ({}): cannot allocate {} bytes ({:.2f} GiB) with {:.2f} GiB free: {}",
                    ordinal_, info_.name, bytes, static_cast<double>(bytes) / (1u << 30),
                    static_cast<double>(free_bytes()) / (1u << 30), message_of(s)));
  return DeviceBuffer(this, p, bytes);
}

HostBuffer CudaDevice::allocate_host(size_t bytes) {
  void* p = nullptr;
  const ts_status s = api_.host_allocate(bytes, &p);
  if (s.code != TS_OK)
    throw std::runtime_error(
        fmt::format("cuda:{} ({}): cannot allocate {} bytes of page-locked "
                    "host memory: {}",
                    ordinal_, info_.name, bytes, message_of(s)));
  const HostRelease release{
      [](const void* api, void* memory) noexcept {
        (void)static_cast<const ts_cuda_device_api*>(api)->host_release(memory);
      },
      &api_};
  return HostBuffer(static_cast<std::byte*>(p), release);
}

bool CudaDevice::page_locked(const void* p) const {
  int32_t kind = 0;
  check(api_.memory_kind(p, &kind), "memory_kind");
  return kind == 1;
}

Stream CudaDevice::create_stream() {
  void* handle = nullptr;
  check(api_.stream_create(ordinal_, &handle), "stream_create");
  return Stream(this, handle);
}

Event CudaDevice::create_event() {
  void* handle = nullptr;
  check(api_.event_create(ordinal_, &handle), "event_create");
  return Event(this, handle);
}

Event CudaDevice::create_timing_event() {
  void* handle = nullptr;
  check(api_.timing_event_create(ordinal_, &handle), "timing_event_create");
  return Event(this, handle);
}

double CudaDevice::elapsed_ms(const Event& start, const Event& end) {
  float ms = 0;
  check(api_.event_elapsed_ms(ordinal_, start.handle(), end.handle(), &ms), "event_elapsed_ms");
  return ms;
}

void CudaDevice::copy(void* dst, const void* src, size_t bytes, CopyKind kind,
                      const Stream& stream) {
  const int32_t k = kind == CopyKind::kHostToDevice   ? TS_COPY_HOST_TO_DEVICE
                    : kind == CopyKind::kDeviceToHost ? TS_COPY_DEVICE_TO_HOST
                                                      : TS_COPY_DEVICE_TO_DEVICE;
  check(api_.copy(ordinal_, dst, src, bytes, k, stream.handle()), "copy");
}

void CudaDevice::fill(void* dst, int byte, size_t bytes, const Stream& stream) {
  check(api_.fill(ordinal_, dst, byte, bytes, stream.handle()), "fill");
}

void CudaDevice::synchronize(const Stream& stream) {
  check(api_.stream_synchronize(ordinal_, stream.handle()), "stream_synchronize");
}

void CudaDevice::record(const Event& event, const Stream& stream) {
  check(api_.event_record(ordinal_, event.handle(), stream.handle()), "event_record");
}

void CudaDevice::wait(const Stream& stream, const Event& event) {
  check(api_.stream_wait_event(ordinal_, stream.handle(), event.handle()), "stream_wait_event");
}

void CudaDevice::release(void* data) noexcept { (void)api_.release(ordinal_, data); }

void CudaDevice::destroy_stream(void* handle) noexcept {
  (void)api_.stream_destroy(ordinal_, handle);
}

void CudaDevice::destroy_event(void* handle) noexcept {
  (void)api_.event_destroy(ordinal_, handle);
}

Graph CudaDevice::capture(const Stream& stream, const std::function<void()>& record) {
  check(api_.capture_begin(ordinal_, stream.handle()), "capture_begin");
  try {
    record();
  } catch (...) {  // end the capture so that the stream runs work again; drop what it recorded
    void* dropped = nullptr;
    if (api_.capture_end(ordinal_, stream.handle(), &dropped).code == TS_OK) {
      (void)api_.graph_destroy(ordinal_, dropped);
    }
    throw;
  }
  void* graph = nullptr;
  check(api_.capture_end(ordinal_, stream.handle(), &graph), "capture_end");
  return Graph(this, graph);
}

void CudaDevice::launch(const Graph& graph, const Stream& stream) {
  check(api_.graph_launch(ordinal_, graph.handle(), stream.handle()), "graph_launch");
}

void CudaDevice::destroy_graph(void* handle) noexcept {
  (void)api_.graph_destroy(ordinal_, handle);
}

}  // namespace tessera::device
