// What every plugin's CUDA module (cmake/TesseraCudaSibling.cmake) answers the same way: its
// error text (a thread's last, returned as const char* across the module's C table), whether a
// device exists, and whether a pointer is device memory. Included by the module sources only,
// which are compiled by nvcc or, for the SIMT emulator, as C++ against its runtime stand-in.
#pragma once

#include <cstdint>
#include <string>

#ifdef TESSERA_DEVICE_EMULATION
#include "cuda_runtime_emulation.hpp"
#else
#include <cuda_runtime.h>
#endif

namespace tessera::cuda_module {

// Keeps `why` as the calling thread's last error and returns it for the C table.
inline const char* failed(std::string why) {
  thread_local std::string last_error;
  last_error = std::move(why);
  return last_error.c_str();
}

inline const char* failed(const std::string& what, cudaError_t e) {
  return failed(what + ": " + cudaGetErrorString(e));
}

// Null when device `ordinal` exists, else why not ("no CUDA device: ...").
inline const char* check_device(int32_t ordinal) {
  int count = 0;  // left unwritten when there is no driver (TOOLCHAIN.md §3)
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
    return failed("no CUDA device: cudaGetDeviceCount failed", e);
  if (count == 0) return failed("no CUDA device: cudaGetDeviceCount found none");
  if (ordinal < 0 || ordinal >= count)
    return failed("CUDA device " + std::to_string(ordinal) + " does not exist (" +
                  std::to_string(count) + " found)");
  return nullptr;
}

inline int32_t is_device_memory(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError();  // an unknown pointer is host memory; clear the sticky error
    return 0;
  }
  return attributes.type == cudaMemoryTypeDevice ? 1 : 0;
}

}  // namespace tessera::cuda_module
