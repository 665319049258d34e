// What the mma backend asks of the CUDA runtime before it plans or launches: whether this build
// has code for a device, the device's limits, and whether a pointer is device memory.
#pragma once

#include <cstdint>
#include <string>

#include "work_plan.hpp"

#ifdef TESSERA_DEVICE_EMULATION
#include "cuda_runtime_emulation.hpp"
#else
#include <cuda_runtime.h>
#endif

#ifndef TESSERA_MMA_CUDA_ARCHS
#define TESSERA_MMA_CUDA_ARCHS "90a"  // the emulator plays a compute capability 9.0 device
#endif

namespace tessera::mma {

// "what: the runtime's text for e".
std::string cuda_error(const std::string& what, cudaError_t e);
// Does this build hold code for compute capability major.minor? "90a" entries are exact (no
// forward compatibility); a plain "120" runs on 12.x and, through its PTX, on later majors.
bool built_for(int major, int minor);
// Reads the limits of device `ordinal` without creating a context. "" or why it cannot be used.
std::string probe_device(int32_t ordinal, DeviceLimits& limits);
// "" when p is device memory, else why not (named `name`).
std::string check_device_pointer(const void* p, const char* name);

}  // namespace tessera::mma
