/* The CUDA device module's C table (docs/cuda.md). libtessera_cuda.so holds every call the core
 * makes into the CUDA runtime; the core dlopens it only when a CUDA device is configured, so the
 * tessera binary itself never needs an NVIDIA library (TOOLCHAIN.md §3).
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

#define TS_CUDA_DEVICE_API_VERSION 1
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
  /* Ordered on `stream` (NULL: the legacy default stream); host memory may be pageable. */
  ts_status (*copy)(int32_t ordinal, void* dst, const void* src, size_t bytes, int32_t kind,
                    void* stream);
  ts_status (*fill)(int32_t ordinal, void* dst, int32_t byte, size_t bytes, void* stream);
  /* A non-blocking stream of `ordinal` (cudaStream_t as void*). */
  ts_status (*stream_create)(int32_t ordinal, void** out);
  ts_status (*stream_destroy)(int32_t ordinal, void* stream);
  ts_status (*stream_synchronize)(int32_t ordinal, void* stream);
} ts_cuda_device_api;

typedef const ts_cuda_device_api* (*ts_cuda_device_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_CUDA_DEVICE_API_H */
