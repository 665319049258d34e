// libtessera_cuda.so: the CUDA runtime calls of the core and its forward kernels behind the C
// table of device_api.h. Linked with the shared cudart only (never the driver stub), loaded with
// dlopen on demand. The same file, built with TESSERA_DEVICE_EMULATION against the SIMT
// emulator's runtime (core/emulator), is libtessera_cuda_emulated.so.
#include <cstring>
#include <string>

#include "device_api.h"
#include "device_graphs.hpp"
#include "kernels/ops_launch.hpp"
#include "runtime_status.hpp"
#include "tessera/plugin_sdk.hpp"

namespace {

using tessera::sdk::fail;
using tessera::sdk::ok;

using tessera::cuda_module::cuda_status;
ts_status select(int32_t ordinal) { return tessera::cuda_module::select_device(ordinal); }

ts_status device_count(int32_t* count) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (count == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "count is null");
    int n = 0;  // left unwritten when there is no driver
    *count = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
      return fail(TS_ERR_UNSUPPORTED, std::string("no CUDA device: ") + cudaGetErrorString(e));
    if (n == 0) return fail(TS_ERR_UNSUPPORTED, "no CUDA device: the driver reports none");
    *count = n;
    return ok();
  });
}

ts_status describe(int32_t ordinal, ts_cuda_device_info* out) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (out == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "out is null");
    cudaDeviceProp prop{};
    if (ts_status s =
            cuda_status(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
        s.code != TS_OK)
      return s;
    if (ts_status s = select(ordinal); s.code != TS_OK) return s;
    ts_cuda_device_info info{};
    info.ordinal = ordinal;
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    info.multiprocessors = prop.multiProcessorCount;
    size_t free_bytes = 0, total_bytes = 0;
    if (ts_status s = cuda_status(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
        s.code != TS_OK)
      return s;
    info.free_bytes = free_bytes;
    info.total_bytes = total_bytes;
    cudaDriverGetVersion(&info.driver_version);
    cudaRuntimeGetVersion(&info.runtime_version);
    std::strncpy(info.name, prop.name, sizeof info.name - 1);
    *out = info;
    return ok();
  });
}

ts_status allocate(int32_t ordinal, size_t bytes, void** out) {
  if (out == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "out is null");
  *out = nullptr;
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaMalloc(out, bytes == 0 ? 1 : bytes),
                     ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str());
}

ts_status release(int32_t ordinal, void* memory) {
  if (memory == nullptr) return ok();
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaFree(memory), "cudaFree");
}

ts_status host_allocate(size_t bytes, void** out) {
  if (out == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "out is null");
  *out = nullptr;
  return cuda_status(cudaHostAlloc(out, bytes == 0 ? 1 : bytes, cudaHostAllocPortable),
                     ("cudaHostAlloc of " + std::to_string(bytes) + " bytes").c_str());
}

ts_status host_release(void* memory) {
  if (memory == nullptr) return ok();
  return cuda_status(cudaFreeHost(memory), "cudaFreeHost");
}

ts_status memory_kind(const void* p, int32_t* kind) {
  if (kind == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "kind is null");
  cudaPointerAttributes a{};
  *kind = 0;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // an unknown pointer is pageable memory, not a sticky error
    return ok();
  }
  if (a.type == cudaMemoryTypeHost) *kind = 1;
  if (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) *kind = 2;
  return ok();
}

ts_status copy(int32_t ordinal, void* dst, const void* src, size_t bytes, int32_t kind,
               void* stream) {
  cudaMemcpyKind k;
  switch (kind) {
    case TS_COPY_HOST_TO_DEVICE:
      k = cudaMemcpyHostToDevice;
      break;
    case TS_COPY_DEVICE_TO_HOST:
      k = cudaMemcpyDeviceToHost;
      break;
    case TS_COPY_DEVICE_TO_DEVICE:
      k = cudaMemcpyDeviceToDevice;
      break;
    default:
      return fail(TS_ERR_INVALID_ARGUMENT, "unknown copy kind " + std::to_string(kind));
  }
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaMemcpyAsync(dst, src, bytes, k, static_cast<cudaStream_t>(stream)),
                     "cudaMemcpyAsync");
}

ts_status fill(int32_t ordinal, void* dst, int32_t byte, size_t bytes, void* stream) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaMemsetAsync(dst, byte, bytes, static_cast<cudaStream_t>(stream)),
                     "cudaMemsetAsync");
}

ts_status stream_create(int32_t ordinal, void** out) {
  if (out == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "out is null");
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  cudaStream_t stream = nullptr;
  ts_status s =
      cuda_status(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  *out = stream;
  return s;
}

ts_status stream_destroy(int32_t ordinal, void* stream) {
  if (stream == nullptr) return ok();
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaStreamDestroy(static_cast<cudaStream_t>(stream)), "cudaStreamDestroy");
}

ts_status stream_synchronize(int32_t ordinal, void* stream) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
                     "cudaStreamSynchronize");
}

ts_status event_create(int32_t ordinal, void** out) {
  if (out == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "out is null");
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  cudaEvent_t event = nullptr;
  ts_status s =
      cuda_status(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  *out = event;
  return s;
}

ts_status timing_event_create(int32_t ordinal, void** out) {
  if (out == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "out is null");
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  cudaEvent_t event = nullptr;
  ts_status s = cuda_status(cudaEventCreateWithFlags(&event, 0), "cudaEventCreate");
  *out = event;
  return s;
}

ts_status event_elapsed_ms(int32_t ordinal, void* start, void* end, float* ms) {
  if (ms == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "ms is null");
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  if (ts_status s =
          cuda_status(cudaEventSynchronize(static_cast<cudaEvent_t>(end)), "cudaEventSynchronize");
      s.code != TS_OK)
    return s;
  return cuda_status(
      cudaEventElapsedTime(ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)),
      "cudaEventElapsedTime");
}

ts_status event_destroy(int32_t ordinal, void* event) {
  if (event == nullptr) return ok();
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaEventDestroy(static_cast<cudaEvent_t>(event)), "cudaEventDestroy");
}

ts_status event_record(int32_t ordinal, void* event, void* stream) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(
      cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
      "cudaEventRecord");
}

ts_status stream_wait_event(int32_t ordinal, void* stream, void* event) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(
      cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0),
      "cudaStreamWaitEvent");
}

ts_status event_synchronize(int32_t ordinal, void* event) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "cudaEventSynchronize");
}

// --- the forward's kernels: launch on the stream, report the launch status.

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

ts_status rms_norm(int32_t ordinal, void* stream, float* x, int64_t rows, int64_t width,
                   const float* weight, float eps) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(
      tessera::kernels::launch_rms_norm(x, rows, width, weight, eps, as_stream(stream)),
      "rms_norm");
}

ts_status swiglu(int32_t ordinal, void* stream, float* g, const float* u, int64_t count,
                 float limit) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(tessera::kernels::launch_swiglu(g, u, count, limit, as_stream(stream)),
                     "swiglu");
}

ts_status embed_bf16(int32_t ordinal, void* stream, const uint16_t* table, int64_t width,
                     const int32_t* ids, int64_t rows, int64_t copies, float* out) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(
      tessera::kernels::launch_embed_bf16(table, width, ids, rows, copies, out, as_stream(stream)),
      "embed_bf16");
}

ts_status linear_bf16(int32_t ordinal, void* stream, const float* x, int64_t rows, int64_t in,
                      const uint16_t* w, int64_t out, float* y) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(
      tessera::kernels::launch_linear_bf16(x, rows, in, w, out, y, as_stream(stream)),
      "linear_bf16");
}

ts_status rope(int32_t ordinal, void* stream, float* x, int64_t tokens, int64_t heads,
               int64_t width, int64_t rope_dim, const int32_t* positions, const float* inv_freq,
               int32_t inverse) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  if (rope_dim % 2 != 0 || rope_dim > width)
    return fail(TS_ERR_INVALID_ARGUMENT, "rope: rope_dim " + std::to_string(rope_dim) +
                                             " must be even and at most the width " +
                                             std::to_string(width));
  return cuda_status(tessera::kernels::launch_rope(x, tokens, heads, width, rope_dim, positions,
                                                   inv_freq, inverse != 0, as_stream(stream)),
                     "rope");
}

ts_status linear_fp8(int32_t ordinal, void* stream, const float* x, int64_t rows, int64_t in,
                     const uint8_t* w, const uint8_t* w_scale, int64_t out, float* y) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(
      tessera::kernels::launch_linear_fp8(x, rows, in, w, w_scale, out, y, as_stream(stream)),
      "linear_fp8");
}

ts_status linear_fp4(int32_t ordinal, void* stream, const float* x, int64_t rows, int64_t in,
                     const uint8_t* w, const uint8_t* w_scale, int64_t out, float* y) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  if (in % 32 != 0)
    return fail(TS_ERR_INVALID_ARGUMENT,
                "linear_fp4: in = " + std::to_string(in) + " is not a multiple of 32");
  return cuda_status(
      tessera::kernels::launch_linear_fp4(x, rows, in, w, w_scale, out, y, as_stream(stream)),
      "linear_fp4");
}

ts_status moe_routing(int32_t ordinal, void* stream, float* scores, int64_t tokens, int64_t experts,
                      int64_t per_token, const float* bias, const int32_t* tid2eid,
                      int64_t table_size, const int32_t* token_ids, double scaling, int32_t* picked,
                      float* weights, int64_t* bad) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  if (per_token < 1 || per_token > experts)
    return fail(TS_ERR_INVALID_ARGUMENT, "moe_routing: " + std::to_string(per_token) +
                                             " experts per token of " + std::to_string(experts));
  return cuda_status(tessera::kernels::launch_moe_routing(scores, tokens, experts, per_token, bias,
                                                          tid2eid, table_size, token_ids, scaling,
                                                          picked, weights, bad, as_stream(stream)),
                     "moe_routing");
}

ts_status hc_mix_logits(int32_t ordinal, void* stream, const float* streams, int64_t tokens,
                        int64_t width, const float* fn, int64_t rows, float eps, float* mix) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(tessera::kernels::launch_hc_mix_logits(streams, tokens, width, fn, rows, eps,
                                                            mix, as_stream(stream)),
                     "hc_mix_logits");
}

ts_status hc_coefficients(int32_t ordinal, void* stream, const float* mix, int64_t tokens,
                          int64_t n, const float* scale, const float* base, int64_t iters,
                          float eps, float* pre, float* post, float* comb) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  if (n < 1 || n > 8)
    return fail(TS_ERR_INVALID_ARGUMENT,
                "hc_coefficients: hc_mult " + std::to_string(n) + " outside [1, 8]");
  return cuda_status(
      tessera::kernels::launch_hc_coefficients(mix, tokens, n, scale, base, iters, eps, pre, post,
                                               comb, as_stream(stream)),
      "hc_coefficients");
}

ts_status hc_pre_mix(int32_t ordinal, void* stream, const float* pre, const float* streams,
                     int64_t tokens, int64_t n, int64_t width, float* x) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(
      tessera::kernels::launch_hc_pre_mix(pre, streams, tokens, n, width, x, as_stream(stream)),
      "hc_pre_mix");
}

ts_status hc_post_mix(int32_t ordinal, void* stream, const float* post, const float* comb,
                      const float* out, int64_t tokens, int64_t n, int64_t width, float* streams) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  if (n < 1 || n > 8)
    return fail(TS_ERR_INVALID_ARGUMENT,
                "hc_post_mix: hc_mult " + std::to_string(n) + " outside [1, 8]");
  return cuda_status(tessera::kernels::launch_hc_post_mix(post, comb, out, tokens, n, width,
                                                          streams, as_stream(stream)),
                     "hc_post_mix");
}

ts_status hc_head_mix(int32_t ordinal, void* stream, const float* mix, const float* scale,
                      const float* base, float eps, const float* streams, int64_t tokens, int64_t n,
                      int64_t width, float* y) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(tessera::kernels::launch_hc_head_mix(mix, scale, base, eps, streams, tokens, n,
                                                          width, y, as_stream(stream)),
                     "hc_head_mix");
}

ts_status row_scan(int32_t ordinal, void* stream, const float* logits, int64_t rows, int64_t vocab,
                   void* scans, float* group_max) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(tessera::kernels::launch_row_scan(logits, rows, vocab,
                                                       static_cast<tessera::ops::RowScan*>(scans),
                                                       group_max, as_stream(stream)),
                     "row_scan");
}

ts_status rms_norm_bf16(int32_t ordinal, void* stream, float* x, int64_t rows, int64_t width,
                        const uint16_t* weight, float eps) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(
      tessera::kernels::launch_rms_norm_bf16(x, rows, width, weight, eps, as_stream(stream)),
      "rms_norm_bf16");
}

ts_status gather_rows(int32_t ordinal, void* stream, const float* x, const int64_t* source,
                      int64_t rows, int64_t width, float* gathered) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(
      tessera::kernels::launch_gather_rows(x, source, rows, width, gathered, as_stream(stream)),
      "gather_rows");
}

ts_status moe_group(int32_t ordinal, void* stream, const int32_t* picked, const float* weight,
                    int64_t tokens, int64_t per_token, int64_t experts, int64_t* offsets,
                    int64_t* source, int64_t* src, float* combine_weight) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(
      tessera::kernels::launch_moe_group(picked, weight, tokens, per_token, experts, offsets,
                                         source, src, combine_weight, as_stream(stream)),
      "moe_group");
}

ts_status grouped_linear(int32_t ordinal, void* stream, int32_t format, const float* x, int64_t in,
                         const void* const* weights, const uint8_t* const* scales, int64_t experts,
                         const int64_t* offsets, int64_t out, float* y) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(
      tessera::kernels::launch_grouped_linear(format, x, in, weights, scales, experts, offsets, out,
                                              y, as_stream(stream)),
      "grouped_linear");
}

ts_status moe_combine(int32_t ordinal, void* stream, const float* results, const int64_t* src,
                      const float* weight, int64_t tokens, int64_t per_token, int64_t width,
                      float* out) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(tessera::kernels::launch_moe_combine(results, src, weight, tokens, per_token,
                                                          width, out, as_stream(stream)),
                     "moe_combine");
}

#ifdef TESSERA_DEVICE_EMULATION
constexpr int32_t kEmulated = 1;
#else
constexpr int32_t kEmulated = 0;
#endif

ts_status linear_f32(int32_t ordinal, void* stream, const float* x, int64_t rows, int64_t in,
                     const float* w, int64_t out, float* y) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(tessera::kernels::launch_linear_f32(x, rows, in, w, out, y, as_stream(stream)),
                     "linear_f32");
}

ts_status embed_f32(int32_t ordinal, void* stream, const float* table, int64_t width,
                    const int32_t* ids, int64_t rows, int64_t copies, float* out) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(
      tessera::kernels::launch_embed_f32(table, width, ids, rows, copies, out, as_stream(stream)),
      "embed_f32");
}

ts_status scale(int32_t ordinal, void* stream, float* x, int64_t count, float s) {
  if (ts_status st = select(ordinal); st.code != TS_OK) return st;
  return cuda_status(tessera::kernels::launch_scale(x, count, s, as_stream(stream)), "scale");
}

ts_status swap_outer_axes(int32_t ordinal, void* stream, const float* x, int64_t a, int64_t b,
                          int64_t c, float* out) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(tessera::kernels::launch_swap_outer_axes(x, a, b, c, out, as_stream(stream)),
                     "swap_outer_axes");
}

ts_status round_to_bf16(int32_t ordinal, void* stream, const float* x, int64_t count,
                        uint16_t* out) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(tessera::kernels::launch_round_to_bf16(x, count, out, as_stream(stream)),
                     "round_to_bf16");
}

ts_status widen_bf16(int32_t ordinal, void* stream, const uint16_t* in, int64_t count, float* y) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(tessera::kernels::launch_widen_bf16(in, count, y, as_stream(stream)),
                     "widen_bf16");
}

ts_status compress_windows(int32_t ordinal, void* stream, const int64_t* window,
                           const int64_t* first_position, const int64_t* first_row,
                           const int64_t* ring_row, int64_t count, int64_t ratio, int64_t dim,
                           const float* kv, const float* gate, const float* ring_kv,
                           const float* ring_gate, float* entries) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(tessera::kernels::launch_compress_windows(
                         window, first_position, first_row, ring_row, count, ratio, dim, kv, gate,
                         ring_kv, ring_gate, entries, as_stream(stream)),
                     "compress_windows");
}

ts_status copy_rows(int32_t ordinal, void* stream, const float* src, const int64_t* src_rows,
                    int64_t rows, int64_t width, float* dst, const int64_t* dst_rows) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(tessera::kernels::launch_copy_rows(src, src_rows, rows, width, dst, dst_rows,
                                                        as_stream(stream)),
                     "copy_rows");
}

const ts_cuda_device_api kApi = {sizeof(ts_cuda_device_api),
                                 TS_CUDA_DEVICE_API_VERSION,
                                 device_count,
                                 describe,
                                 allocate,
                                 release,
                                 copy,
                                 fill,
                                 stream_create,
                                 stream_destroy,
                                 stream_synchronize,
                                 event_create,
                                 event_destroy,
                                 event_record,
                                 stream_wait_event,
                                 event_synchronize,
                                 rms_norm,
                                 swiglu,
                                 embed_bf16,
                                 linear_bf16,
                                 rope,
                                 linear_fp8,
                                 linear_fp4,
                                 moe_routing,
                                 hc_mix_logits,
                                 hc_coefficients,
                                 hc_pre_mix,
                                 hc_post_mix,
                                 hc_head_mix,
                                 row_scan,
                                 rms_norm_bf16,
                                 gather_rows,
                                 moe_combine,
                                 linear_f32,
                                 embed_f32,
                                 scale,
                                 swap_outer_axes,
                                 kEmulated,
                                 timing_event_create,
                                 event_elapsed_ms,
                                 moe_group,
                                 grouped_linear,
                                 round_to_bf16,
                                 widen_bf16,
                                 compress_windows,
                                 copy_rows,
                                 host_allocate,
                                 host_release,
                                 memory_kind,
                                 tessera::cuda_module::capture_begin,
                                 tessera::cuda_module::capture_end,
                                 tessera::cuda_module::graph_launch,
                                 tessera::cuda_module::graph_destroy};

}  // namespace

extern "C" __attribute__((visibility("default"))) const ts_cuda_device_api*
tessera_cuda_device_entry(void) {
  return &kApi;
}
