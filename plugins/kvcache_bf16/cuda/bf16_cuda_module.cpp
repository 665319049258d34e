// The CUDA module of the "bf16" kv-cache plugin (bf16_cuda_api.h): the runtime calls and kernel
// launches the plugin needs for a CUDA device, built for the GPU (nvcc) and for the SIMT
// emulator from this one source.
#include <algorithm>
#include <string>

#include "bf16_cuda_api.h"
#include "bf16_records.hpp"
#include "cuda_module_support.hpp"

namespace {

using tessera::kvbf16::kSlotsPerLaunch;
using tessera::kvbf16::SlotChunk;

using tessera::cuda_module::check_device;
using tessera::cuda_module::failed;
using tessera::cuda_module::is_device_memory;

const char* copy_to_host(int32_t ordinal, void* stream, void* host, const void* device,
                         size_t bytes) {
  if (const cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess)
    return failed("cudaSetDevice", e);
  auto* s = static_cast<cudaStream_t>(stream);
  if (const cudaError_t e = cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, s);
      e != cudaSuccess)
    return failed("copying the rows to the host", e);
  if (const cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess)
    return failed("waiting for the stream", e);
  return nullptr;
}

// Runs launch(chunk, first, count) over slots in chunks of kSlotsPerLaunch.
template <class Launch>
const char* in_chunks(int32_t ordinal, const int64_t* slots, int64_t n, const char* what,
                      Launch launch) {
  if (const cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess)
    return failed("cudaSetDevice", e);
  SlotChunk chunk{};
  for (int64_t first = 0; first < n; first += kSlotsPerLaunch) {
    const int count = static_cast<int>(std::min<int64_t>(kSlotsPerLaunch, n - first));
    std::copy(slots + first, slots + first + count, chunk.slot);
    if (const cudaError_t e = launch(chunk, first, count); e != cudaSuccess) return failed(what, e);
  }
  return nullptr;
}

const char* store(int32_t ordinal, void* stream, const ts_bf16_records* records, const float* rows,
                  int64_t n, const int64_t* slots, uint8_t* pool) {
  return in_chunks(ordinal, slots, n, "launching the bf16 store",
                   [&](const SlotChunk& chunk, int64_t first, int count) {
                     return tessera::kvbf16::launch_store_records(
                         *records, rows + first * records->dim, chunk, count, pool,
                         static_cast<cudaStream_t>(stream));
                   });
}

const char* load(int32_t ordinal, void* stream, const ts_bf16_records* records, const uint8_t* pool,
                 const int64_t* slots, int64_t n, float* rows) {
  return in_chunks(ordinal, slots, n, "launching the bf16 load",
                   [&](const SlotChunk& chunk, int64_t first, int count) {
                     return tessera::kvbf16::launch_load_records(*records, pool, chunk, count,
                                                                 rows + first * records->dim,
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
