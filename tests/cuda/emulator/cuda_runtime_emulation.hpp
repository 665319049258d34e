// The few CUDA runtime names the mma plugin uses, for the SIMT emulator build (no NVIDIA
// libraries): "device" memory is host memory, launches run on the emulator at once, on the
// caller's thread. Only what plugins/attention_mma calls is here; anything else must not compile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorLaunchFailure = 719 };
using cudaStream_t = struct CUstream_emulated*;
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaDeviceAttr {
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
};
enum cudaMemoryType {
  cudaMemoryTypeUnregistered = 0,
  cudaMemoryTypeHost = 1,
  cudaMemoryTypeDevice = 2
};
struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
};

namespace tessera::emu {
cudaError_t take_last_error();  // the launch error since the last call, then cleared
const char* last_error_text();
bool is_device_memory(const void* p);
// The emulated device: an H200-like shared-memory budget with few multiprocessors, so that test
// batches still split rows over several blocks.
inline constexpr int kEmulatedSmCount = 4;
inline constexpr int kEmulatedSmemPerBlock = 227 * 1024;
inline constexpr int kEmulatedSmemPerSm = 228 * 1024;
}  // namespace tessera::emu

inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int ordinal) {
  return ordinal == 0 ? cudaSuccess : cudaErrorInvalidValue;
}
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int ordinal) {
  if (ordinal != 0) return cudaErrorInvalidValue;
  switch (attr) {
    case cudaDevAttrMultiProcessorCount:
      *value = tessera::emu::kEmulatedSmCount;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *value = 9;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *value = 0;
      break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      *value = tessera::emu::kEmulatedSmemPerSm;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = tessera::emu::kEmulatedSmemPerBlock;
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}
template <class Kernel>
cudaError_t cudaFuncSetAttribute(Kernel*, cudaFuncAttribute, int value) {
  return value <= tessera::emu::kEmulatedSmemPerBlock ? cudaSuccess : cudaErrorInvalidValue;
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind,
                                   cudaStream_t) {
  std::memcpy(dst, src, n);
  return cudaSuccess;
}
inline cudaError_t cudaGetLastError() { return tessera::emu::take_last_error(); }
inline const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : tessera::emu::last_error_text();
}
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  a->type = tessera::emu::is_device_memory(p) ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
  a->device = 0;
  return cudaSuccess;
}
