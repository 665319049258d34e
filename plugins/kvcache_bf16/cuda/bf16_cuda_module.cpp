// The CUDA module of the "bf16" kv-cache plugin (bf16_cuda_api.h): the runtime calls and kernel
// launches the plugin needs for a CUDA device, built for the GPU (nvcc) and for the SIMT
// emulator from this one source.
#include "bf16_cuda_api.h"
#include "bf16_records.hpp"
#include "cuda_slot_chunks.hpp"

namespace {

using tessera::cuda_module::check_device;
using tessera::cuda_module::copy_to_host;
using tessera::cuda_module::in_slot_chunks;
using tessera::cuda_module::is_device_memory;
using tessera::cuda_module::SlotChunk;

const char* store(int32_t ordinal, void* stream, const ts_bf16_records* records, const float* rows,
                  int64_t n, const int64_t* slots, uint8_t* pool) {
  return in_slot_chunks(ordinal, slots, n, "launching the bf16 store",
                        [&](const SlotChunk& chunk, int64_t first, int count) {
                          return tessera::kvbf16::launch_store_records(
                              *records, rows + first * records->dim, chunk, count, pool,
                              static_cast<cudaStream_t>(stream));
                        });
}

const char* load(int32_t ordinal, void* stream, const ts_bf16_records* records, const uint8_t* pool,
                 const int64_t* slots, int64_t n, float* rows) {
  return in_slot_chunks(ordinal, slots, n, "launching the bf16 load",
                        [&](const SlotChunk& chunk, int64_t first, int count) {
                          return tessera::kvbf16::launch_load_records(
                              *records, pool, chunk, count, rows + first * records->dim,
                              static_cast<cudaStream_t>(stream));
                        });
}

const ts_bf16_cuda_api kApi = {
    sizeof(ts_bf16_cuda_api), check_device, is_device_memory, copy_to_host, store, load};

}  // namespace

extern "C" __attribute__((visibility("default"))) const ts_bf16_cuda_api*
tessera_kvcache_bf16_cuda_entry() {
  return &kApi;
}
