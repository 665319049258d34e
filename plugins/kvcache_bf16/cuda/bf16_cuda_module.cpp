// The CUDA module of the "bf16" kv-cache plugin (bf16_cuda_api.h): the runtime calls and kernel
// launches the plugin needs for a CUDA device, built for the GPU (nvcc) and for the SIMT
// emulator from this one source.
#include <algorithm>
#include <string>

#include "bf16_cuda_api.h"
#include "bf16_records.hpp"

namespace {

using tessera::kvbf16::kSlotsPerLaunch;
using tessera::kvbf16::SlotChunk;

thread_local std::string t_error;

const char* failed(std::string why) {
  t_error = std::move(why);
  return t_error.c_str();
}

const char* failed(const std::string& what, cudaError_t e) {
  return failed(what + ": " + cudaGetErrorString(e));
}

const char* check_device(int32_t ordinal) {
  int count = 0;  // left unwritten when there is no driver (TOOLCHAIN.md §3)
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
    return failed("no CUDA device: cudaGetDeviceCount failed", e);
  if (count == 0) return failed("no CUDA device: cudaGetDeviceCount found none");
  if (ordinal < 0 || ordinal >= count)
    return failed("CUDA device " + std::to_string(ordinal) + " does not exist (" +
                  std::to_string(count) + " found)");
  return nullptr;
}

int32_t is_device_memory(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError();  // an unknown pointer is host memory; clear the sticky error
    return 0;
  }
  return attributes.type == cudaMemoryTypeDevice ? 1 : 0;
}

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
