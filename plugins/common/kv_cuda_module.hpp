// The C table of a kv-cache plugin's CUDA module (shape of ts_bf16_cuda_api / ts_fp8_cuda_api):
// check_device, is_device_memory, copy_to_host and store / load running the module's launchers
// over the slots in chunks (cuda_slot_chunks.hpp). A module's entry point returns
// &KvModule<Api, Records, its_store_launcher, its_load_launcher>::kTable. Included by module
// sources only (nvcc or the SIMT emulator's C++ build).
#pragma once

#include <cstdint>

#include "cuda_slot_chunks.hpp"

namespace tessera::cuda_module {

template <class Records>
using StoreLauncher = cudaError_t (*)(const Records&, const float*, const SlotChunk&, int, uint8_t*,
                                      cudaStream_t, int64_t* first_bad, int64_t row0);
template <class Records>
using LoadLauncher = cudaError_t (*)(const Records&, const uint8_t*, const SlotChunk&, int, float*,
                                     cudaStream_t);

template <class Api, class Records, StoreLauncher<Records> kStore, LoadLauncher<Records> kLoad>
struct KvModule {
  // rows [n, records->dim] (device) -> the records of slots[0..n), enqueued; a non-finite row
  // is not written and its index min-reduced into *first_bad_row (null: rows known finite).
  static const char* store(int32_t ordinal, void* stream, const Records* records, const float* rows,
                           int64_t n, const int64_t* slots, uint8_t* pool, int64_t* first_bad_row) {
    return in_slot_chunks(ordinal, slots, n, "launching the store kernel",
                          [&](const SlotChunk& chunk, int64_t first, int count) {
                            return kStore(*records, rows + first * records->dim, chunk, count, pool,
                                          static_cast<cudaStream_t>(stream), first_bad_row, first);
                          });
  }

  // As store, with slots [n] in device memory (a negative slot: a padding row, skipped), in one
  // launch: nothing is read on the host, so the launch can be captured in a CUDA graph.
  static const char* store_device_slots(int32_t ordinal, void* stream, const Records* records,
                                        const float* rows, int64_t n, const int64_t* slots,
                                        uint8_t* pool, int64_t* first_bad_row) {
    if (n > INT32_MAX) return failed("store_device_slots: more than 2^31 rows in one call");
    if (const cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess)
      return failed("cudaSetDevice", e);
    SlotChunk chunk{};
    chunk.device = slots;
    if (const cudaError_t e = kStore(*records, rows, chunk, static_cast<int>(n), pool,
                                     static_cast<cudaStream_t>(stream), first_bad_row, 0);
        e != cudaSuccess)
      return failed("launching the store kernel", e);
    return nullptr;
  }

  // The records of slots[0..n) -> rows [n, records->dim] (device), enqueued.
  static const char* load(int32_t ordinal, void* stream, const Records* records,
                          const uint8_t* pool, const int64_t* slots, int64_t n, float* rows) {
    return in_slot_chunks(ordinal, slots, n, "launching the load kernel",
                          [&](const SlotChunk& chunk, int64_t first, int count) {
                            return kLoad(*records, pool, chunk, count, rows + first * records->dim,
                                         static_cast<cudaStream_t>(stream));
                          });
  }

  static constexpr Api kTable = {sizeof(Api), check_device, is_device_memory,  copy_to_host,
                                 store,       load,         store_device_slots};
};

}  // namespace tessera::cuda_module
