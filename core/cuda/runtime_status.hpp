// The device module's CUDA runtime errors as ts_status (device_runtime.cpp, device_graphs.cpp).
#pragma once

#ifdef TESSERA_DEVICE_EMULATION
#include "cuda_runtime_emulation.hpp"
#else
#include <cuda_runtime.h>
#endif

#include <string>

#include "tessera/plugin_sdk.hpp"

namespace tessera::cuda_module {

// TS_OK, or the call's name with the runtime's message (out of memory: TS_ERR_OUT_OF_MEMORY).
inline ts_status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) {
    return sdk::ok();
  }
  return sdk::fail(e == cudaErrorMemoryAllocation ? TS_ERR_OUT_OF_MEMORY : TS_ERR_INTERNAL,
                   std::string(what) + ": " + cudaGetErrorString(e));
}

// Makes `ordinal` this thread's current device.
inline ts_status select_device(int32_t ordinal) {
  return cuda_status(cudaSetDevice(ordinal), "cudaSetDevice");
}

}  // namespace tessera::cuda_module
