/* The C table between the "fp8" kv-cache plugin and its CUDA module (docs/plugins.md, "Plugins
 * with device code"): libtessera_kvcache_fp8_cuda.so (nvcc) or
 * libtessera_kvcache_fp8_cuda_emulated.so (SIMT emulator), loaded by the plugin only for a CUDA
 * device. Every function names its device ordinal and returns NULL on success or the reason it
 * failed (owned by the module, valid until the next call on the same thread). */
#ifndef TESSERA_KVCACHE_FP8_CUDA_API_H
#define TESSERA_KVCACHE_FP8_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TS_FP8_CUDA_ENTRY_SYMBOL "tessera_kvcache_fp8_cuda_entry"

/* One stream's page geometry (fp8_layout.hpp): slot s lies in page s / entries_per_page at entry
 * s % entries_per_page. Main (indexer = 0): records of nope e4m3 bytes + rope bf16 values, then
 * the entries' scale groups (ceil(nope / 64) UE8M0 bytes + 1 pad byte each). Indexer (indexer =
 * 1): dim e4m3 bytes per entry, then one fp32 scale per entry. */
typedef struct ts_fp8_records {
  int32_t indexer;
  int32_t dim, rope_dim;
  int64_t entries_per_page;
  uint64_t page_bytes;
} ts_fp8_records;

typedef struct ts_fp8_cuda_api {
  uint32_t struct_size;
  /* NULL when device `ordinal` can run the module's kernels, else why not ("no CUDA device: ...").
   */
  const char* (*check_device)(int32_t ordinal);
  /* 1 when p is device memory (of any device), 0 when it is host memory. */
  int32_t (*is_device_memory)(const void* p);
  /* Copies bytes from device to host memory on `stream` and waits for the stream. */
  const char* (*copy_to_host)(int32_t ordinal, void* stream, void* host, const void* device,
                              size_t bytes);
  /* Enqueues the encoding of rows [n, dim] fp32 (device) into the entries of slots[0..n) (host;
   * n >= 0, every slot >= 0). A row holding a non-finite value is not written and its index is
   * min-reduced into *first_bad_row (device memory); NULL: the rows are known finite. */
  const char* (*store)(int32_t ordinal, void* stream, const ts_fp8_records* records,
                       const float* rows, int64_t n, const int64_t* slots, uint8_t* pool,
                       int64_t* first_bad_row);
  /* Enqueues the decoding of the entries of slots[0..n) into rows [n, dim] fp32 (device). */
  const char* (*load)(int32_t ordinal, void* stream, const ts_fp8_records* records,
                      const uint8_t* pool, const int64_t* slots, int64_t n, float* rows);
  /* As store with slots[0..n) in device memory, one launch that reads nothing on the host (it
   * can be captured in a CUDA graph); a negative slot is a padding row: not written, not checked.
   */
  const char* (*store_device_slots)(int32_t ordinal, void* stream, const ts_fp8_records* records,
                                    const float* rows, int64_t n, const int64_t* slots,
                                    uint8_t* pool, int64_t* first_bad_row);
} ts_fp8_cuda_api;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_KVCACHE_FP8_CUDA_API_H */
