/* The CUDA device module's C table (docs/cuda.md). libtessera_cuda.so holds every call the core
 * makes into the CUDA runtime and the forward's kernels; the core dlopens it only when a CUDA
 * device is configured, so the tessera binary itself never needs an NVIDIA library (TOOLCHAIN.md
 * §3). libtessera_cuda_emulated.so is the same source built for the SIMT emulator (CPU): the
 * same table, selected by `[executor] cuda_module = "emulated"`.
 *
 * Ownership: the core owns devices, memory and streams and hands them to plugins (plugin_abi.h);
 * this table is how it gets them. Memory and streams are released through the same table. All
 * functions are thread-safe; a call names its device, never relies on the calling thread's
 * current device. */
#ifndef TESSERA_CUDA_DEVICE_API_H
#define TESSERA_CUDA_DEVICE_API_H

#include <stddef.h>
#include <stdint.h>

#include "tessera/plugin_abi.h" /* ts_status */

#ifdef __cplusplus
extern "C" {
#endif

#define TS_CUDA_DEVICE_API_VERSION 8
#define TS_CUDA_DEVICE_ENTRY_SYMBOL "tessera_cuda_device_entry"

typedef struct ts_cuda_device_info {
  int32_t ordinal;
  int32_t compute_major, compute_minor;
  int32_t multiprocessors;
  uint64_t total_bytes, free_bytes;
  int32_t driver_version, runtime_version; /* e.g. 13000 */
  char name[256];
} ts_cuda_device_info;

typedef enum ts_copy_kind {
  TS_COPY_HOST_TO_DEVICE = 1,
  TS_COPY_DEVICE_TO_HOST = 2,
  TS_COPY_DEVICE_TO_DEVICE = 3
} ts_copy_kind;

typedef struct ts_cuda_device_api {
  uint32_t struct_size;
  uint32_t version; /* TS_CUDA_DEVICE_API_VERSION */
  /* Number of usable devices; TS_ERR_UNSUPPORTED "no CUDA device: ..." when there is no driver or
   * no device (count is then 0). */
  ts_status (*device_count)(int32_t* count);
  ts_status (*describe)(int32_t ordinal, ts_cuda_device_info* out);
  /* Device memory of `ordinal` (cudaMalloc: 256-byte aligned). */
  ts_status (*allocate)(int32_t ordinal, size_t bytes, void** out);
  ts_status (*release)(int32_t ordinal, void* memory);
  /* Ordered on `stream` (NULL: the legacy default stream). Host memory may be pageable (the
   * runtime stages it: a host-to-device copy has read it when the call returns) or from
   * host_allocate (read and written by the device as the stream runs: leave it alone until the
   * stream has passed the copy). */
  ts_status (*copy)(int32_t ordinal, void* dst, const void* src, size_t bytes, int32_t kind,
                    void* stream);
  ts_status (*fill)(int32_t ordinal, void* dst, int32_t byte, size_t bytes, void* stream);
  /* A non-blocking stream of `ordinal` (cudaStream_t as void*). */
  ts_status (*stream_create)(int32_t ordinal, void** out);
  ts_status (*stream_destroy)(int32_t ordinal, void* stream);
  ts_status (*stream_synchronize)(int32_t ordinal, void* stream);

  /* Events (cudaEvent_t as void*, timing off): order work between streams without a host wait. */
  ts_status (*event_create)(int32_t ordinal, void** out);
  ts_status (*event_destroy)(int32_t ordinal, void* event);
  ts_status (*event_record)(int32_t ordinal, void* event, void* stream);
  ts_status (*stream_wait_event)(int32_t ordinal, void* stream, void* event);
  ts_status (*event_synchronize)(int32_t ordinal, void* event);

  /* The forward's kernels (core/cuda/kernels/ops_launch.hpp has their contracts and shapes),
   * enqueued on `stream`; every pointer is device memory of `ordinal`. A launch error is returned
   * here, an execution error by the next synchronisation. */
  ts_status (*rms_norm)(int32_t ordinal, void* stream, float* x, int64_t rows, int64_t width,
                        const float* weight, float eps);
  ts_status (*swiglu)(int32_t ordinal, void* stream, float* g, const float* u, int64_t count,
                      float limit);
  ts_status (*embed_bf16)(int32_t ordinal, void* stream, const uint16_t* table, int64_t width,
                          const int32_t* ids, int64_t rows, int64_t copies, float* out);
  ts_status (*linear_bf16)(int32_t ordinal, void* stream, const float* x, int64_t rows, int64_t in,
                           const uint16_t* w, int64_t out, float* y);
  ts_status (*rope)(int32_t ordinal, void* stream, float* x, int64_t tokens, int64_t heads,
                    int64_t width, int64_t rope_dim, const int32_t* positions,
                    const float* inv_freq, int32_t inverse);
  ts_status (*linear_fp8)(int32_t ordinal, void* stream, const float* x, int64_t rows, int64_t in,
                          const uint8_t* w, const uint8_t* w_scale, int64_t out, float* y);
  ts_status (*linear_fp4)(int32_t ordinal, void* stream, const float* x, int64_t rows, int64_t in,
                          const uint8_t* w, const uint8_t* w_scale, int64_t out, float* y);
  /* bias, tid2eid (null: a learned layer), token_ids: device memory; *bad (device) is set to
   * `tokens` on the stream, then min-reduced with the lowest token whose routing failed. */
  ts_status (*moe_routing)(int32_t ordinal, void* stream, float* scores, int64_t tokens,
                           int64_t experts, int64_t per_token, const float* bias,
                           const int32_t* tid2eid, int64_t table_size, const int32_t* token_ids,
                           double scaling, int32_t* picked, float* weights, int64_t* bad);
  /* The mHC mixes; scale, base and every array are device memory. */
  ts_status (*hc_mix_logits)(int32_t ordinal, void* stream, const float* streams, int64_t tokens,
                             int64_t width, const float* fn, int64_t rows, float eps, float* mix);
  ts_status (*hc_coefficients)(int32_t ordinal, void* stream, const float* mix, int64_t tokens,
                               int64_t n, const float* scale, const float* base, int64_t iters,
                               float eps, float* pre, float* post, float* comb);
  ts_status (*hc_pre_mix)(int32_t ordinal, void* stream, const float* pre, const float* streams,
                          int64_t tokens, int64_t n, int64_t width, float* x);
  ts_status (*hc_post_mix)(int32_t ordinal, void* stream, const float* post, const float* comb,
                           const float* out, int64_t tokens, int64_t n, int64_t width,
                           float* streams);
  ts_status (*hc_head_mix)(int32_t ordinal, void* stream, const float* mix, const float* scale,
                           const float* base, float eps, const float* streams, int64_t tokens,
                           int64_t n, int64_t width, float* y);
  /* scans: [rows] of {float max; int32 argmax; bool finite} (ts_row_scan's fields); group_max
   * [rows, TS_LOGIT_GROUP_COUNT(vocab)] or null. */
  ts_status (*row_scan)(int32_t ordinal, void* stream, const float* logits, int64_t rows,
                        int64_t vocab, void* scans, float* group_max);
  ts_status (*rms_norm_bf16)(int32_t ordinal, void* stream, float* x, int64_t rows, int64_t width,
                             const uint16_t* weight, float eps);
  ts_status (*gather_rows)(int32_t ordinal, void* stream, const float* x, const int64_t* source,
                           int64_t rows, int64_t width, float* gathered);
  ts_status (*moe_combine)(int32_t ordinal, void* stream, const float* results, const int64_t* src,
                           const float* weight, int64_t tokens, int64_t per_token, int64_t width,
                           float* out);
  /* Version 3: fp32 weights and tables, and the two data movers. */
  ts_status (*linear_f32)(int32_t ordinal, void* stream, const float* x, int64_t rows, int64_t in,
                          const float* w, int64_t out, float* y);
  ts_status (*embed_f32)(int32_t ordinal, void* stream, const float* table, int64_t width,
                         const int32_t* ids, int64_t rows, int64_t copies, float* out);
  ts_status (*scale)(int32_t ordinal, void* stream, float* x, int64_t count, float s);
  ts_status (*swap_outer_axes)(int32_t ordinal, void* stream, const float* x, int64_t a, int64_t b,
                               int64_t c, float* out);

  /* 1 for the SIMT emulator's module (libtessera_cuda_emulated.so), 0 for the GPU's. */
  int32_t emulated;

  /* Timing events (benchmarks): like event_create with timing on; elapsed_ms waits for both and
   * gives the milliseconds between them (cudaEventElapsedTime). */
  ts_status (*timing_event_create)(int32_t ordinal, void** out);
  ts_status (*event_elapsed_ms)(int32_t ordinal, void* start, void* end, float* ms);

  /* The MoE without a host round trip (kernels/ops_launch.hpp: launch_moe_group,
   * launch_grouped_linear; format 0 bf16, 1 f32, 2 fp8, 3 fp4). */
  ts_status (*moe_group)(int32_t ordinal, void* stream, const int32_t* picked, const float* weight,
                         int64_t tokens, int64_t per_token, int64_t experts, int64_t* offsets,
                         int64_t* source, int64_t* src, float* combine_weight);
  ts_status (*grouped_linear)(int32_t ordinal, void* stream, int32_t format, const float* x,
                              int64_t in, const void* const* weights, const uint8_t* const* scales,
                              int64_t experts, const int64_t* offsets, int64_t out, float* y);

  /* Version 5: fp32 <-> bf16 (round to nearest even; widening is exact), for bf16 collectives. */
  ts_status (*round_to_bf16)(int32_t ordinal, void* stream, const float* x, int64_t count,
                             uint16_t* out);
  ts_status (*widen_bf16)(int32_t ordinal, void* stream, const uint16_t* in, int64_t count,
                          float* y);

  /* Version 6: the compressors on the device (kernels/compressor_pool.cu; the rows' places are
   * described by tessera::device::CompressorWindows, device/device_ops.hpp). */
  ts_status (*compress_windows)(int32_t ordinal, void* stream, const int64_t* window,
                                const int64_t* first_position, const int64_t* first_row,
                                const int64_t* ring_row, int64_t count, int64_t ratio, int64_t dim,
                                const float* kv, const float* gate, const float* ring_kv,
                                const float* ring_gate, float* entries);
  ts_status (*copy_rows)(int32_t ordinal, void* stream, const float* src, const int64_t* src_rows,
                         int64_t rows, int64_t width, float* dst, const int64_t* dst_rows);

  /* Version 7: page-locked host memory (cudaHostAlloc, portable: usable with every device of the
   * process), so that copies run without the runtime staging them (the step's logits come back
   * into it). Tied to no device: it stays valid after the devices' objects are gone, as the
   * module stays loaded for the life of the process. */
  ts_status (*host_allocate)(size_t bytes, void** out);
  ts_status (*host_release)(void* memory);
  /* Where `p` lives: 0 pageable host memory (or unknown), 1 host_allocate's, 2 device memory. */
  ts_status (*memory_kind)(const void* p, int32_t* kind);
  /* Version 8: CUDA graphs. Between capture_begin and capture_end the work enqueued on `stream`
   * is recorded, not run (stream capture, this thread's mode); capture_end instantiates it as an
   * executable graph, or fails naming what broke the capture (a synchronisation, a host-to-device
   * copy from pageable memory). graph_launch enqueues the whole graph on a stream: every kernel
   * with the arguments it was captured with, every copy between the same addresses. */
  ts_status (*capture_begin)(int32_t ordinal, void* stream);
  ts_status (*capture_end)(int32_t ordinal, void* stream, void** graph);
  ts_status (*graph_launch)(int32_t ordinal, void* graph, void* stream);
  ts_status (*graph_destroy)(int32_t ordinal, void* graph);
} ts_cuda_device_api;

typedef const ts_cuda_device_api* (*ts_cuda_device_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_CUDA_DEVICE_API_H */
