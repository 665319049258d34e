// Slots handed to a kv-cache plugin's kernels by value, kSlotsPerLaunch per launch (2 KiB of
// kernel parameters), so a plugin needs no device memory of its own for them: the slots of a
// store or load stay in host memory (plugin_abi.h, ts_device) and travel inside the launch.
// Included by the plugins' CUDA module sources (nvcc or the SIMT emulator's C++ build).
#pragma once

#include <algorithm>
#include <cstdint>

#include "cuda_module_support.hpp"

namespace tessera::cuda_module {

inline constexpr int kSlotsPerLaunch = 256;

// The slots of one launch: by value, or (device != null) read by the kernels from device memory,
// where a negative slot marks a padding row to skip (ABI 1.6 store_device_slots).
struct SlotChunk {
  const int64_t* device;
  int64_t slot[kSlotsPerLaunch];
};

// Runs launch(chunk, first, count) over slots[0..n) in chunks of kSlotsPerLaunch on device
// `ordinal`; null on success, else `what` and the CUDA error.
template <class Launch>
const char* in_slot_chunks(int32_t ordinal, const int64_t* slots, int64_t n, const char* what,
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

// Copies bytes from device to host memory on `stream` and waits for the stream.
inline const char* copy_to_host(int32_t ordinal, void* stream, void* host, const void* device,
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

}  // namespace tessera::cuda_module
