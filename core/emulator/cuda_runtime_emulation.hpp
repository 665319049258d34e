// The few CUDA runtime names Tessera's kernels and their launchers use, for the SIMT emulator
// build (no NVIDIA libraries): "device" memory is host memory with guard pages, launches and
// copies are enqueued on emulated streams (emulated_streams.hpp) and run when waited for. Only
// what the code calls is here; anything else must not compile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

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

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorLaunchFailure = 719,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901
};
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2
};
inline constexpr unsigned cudaStreamNonBlocking = 1;
inline constexpr unsigned cudaEventDisableTiming = 2;
inline constexpr unsigned cudaHostAllocPortable = 1;
struct cudaDeviceProp {
  char name[256];
  int major, minor;
  int multiProcessorCount;
};
using cudaStream_t = struct CUstream_emulated*;
using cudaEvent_t = struct CUevent_emulated*;
using cudaGraph_t = struct CUgraph_emulated*;
using cudaGraphExec_t = struct CUgraphExec_emulated*;
enum cudaMemcpyKind {
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3
};
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
  cudaMemoryTypeDevice = 2,
  cudaMemoryTypeManaged = 3
};
struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
};

namespace tessera::emu {
void enqueue(cudaStream_t stream, std::function<void()> work);  // emulated_streams.hpp
cudaError_t take_last_error();  // the launch error since the last call, then cleared
const char* last_error_text();
const char* sync_error_text();  // the last failed stream or event synchronisation's text
bool is_device_memory(const void* p);
bool is_page_locked(const void* p);   // from cudaHostAlloc (emulated_runtime.cpp)
bool capturing(cudaStream_t stream);  // emulated_streams.hpp
void capture_invalidate(cudaStream_t stream, const std::string& why);  // emulated_streams.hpp
const char* capture_error_text();  // what invalidated the last capture that failed to end
// How many devices the emulator reports: TESSERA_EMULATED_DEVICES (1 to 16; default 1). They are
// labels over the one emulator (the host's memory, one set of streams), so that ranks on devices
// of their own (tensor parallelism, one device per rank) run as on GPUs.
int device_count();
// The emulated device: an H200-like shared-memory budget with few multiprocessors, so that test
// batches still split rows over several blocks.
inline constexpr int kEmulatedSmCount = 4;
inline constexpr int kEmulatedSmemPerBlock = 227 * 1024;
inline constexpr int kEmulatedSmemPerSm = 228 * 1024;
}  // namespace tessera::emu

inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = tessera::emu::device_count();
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int ordinal) {
  return ordinal >= 0 && ordinal < tessera::emu::device_count() ? cudaSuccess
                                                                : cudaErrorInvalidValue;
}
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int ordinal) {
  if (cudaSetDevice(ordinal) != cudaSuccess) {
    return cudaErrorInvalidValue;
  }
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
// Ordered on the stream. A host-to-device copy from pageable memory reads its source now, as the
// runtime stages it before returning; one from page-locked memory (cudaHostAlloc) reads it when
// the stream runs the copy, as a GPU's DMA does, so that writing the source too early shows.
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                                   cudaStream_t stream) {
  if (kind == cudaMemcpyHostToDevice && !tessera::emu::is_page_locked(src) &&
      tessera::emu::capturing(stream)) {  // the runtime would stage it now, never at a replay
    tessera::emu::capture_invalidate(
        stream, "a host-to-device copy of " + std::to_string(n) +
                    " bytes from pageable memory (a graph copies from page-locked memory only)");
    return cudaErrorStreamCaptureUnsupported;
  }
  if (kind == cudaMemcpyHostToDevice && !tessera::emu::is_page_locked(src)) {
    auto staged = std::make_shared<std::vector<unsigned char>>(
        static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + n);
    tessera::emu::enqueue(stream,
                          [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
  } else {
    tessera::emu::enqueue(stream, [dst, src, n] { std::memcpy(dst, src, n); });
  }
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* dst, int value, size_t n, cudaStream_t stream) {
  tessera::emu::enqueue(stream, [dst, value, n] { std::memset(dst, value, n); });
  return cudaSuccess;
}
inline cudaError_t cudaGetLastError() { return tessera::emu::take_last_error(); }
inline const char* cudaGetErrorString(cudaError_t e) {
  if (e == cudaSuccess) {
    return "no error";
  }
  if (e == cudaErrorMemoryAllocation) {
    return "out of memory";
  }
  if (e == cudaErrorInvalidValue) {
    return "invalid argument";
  }
  if (e == cudaErrorStreamCaptureUnsupported) {
    return "operation not permitted when stream is capturing";
  }
  if (e == cudaErrorStreamCaptureInvalidated) {
    return tessera::emu::capture_error_text();
  }
  const char* launch = tessera::emu::last_error_text();
  return launch[0] != '\0' ? launch : tessera::emu::sync_error_text();
}
// The device's side of the runtime, in emulated_runtime.cpp: allocations with guard pages,
// streams and events of emulated_streams.hpp; stream and event synchronisation report the first
// failure of the work they ran (its text through cudaGetErrorString).
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int ordinal);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaRuntimeGetVersion(int* version);
cudaError_t cudaMalloc(void** p, size_t bytes);
cudaError_t cudaFree(void* p);
// Page-locked host memory: the host's, remembered so that copies and cudaPointerGetAttributes
// treat it as a GPU's runtime does.
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
// Milliseconds between the times the stream ran up to `start` and to `end` (both complete).
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
// CUDA graphs by stream capture (emulated_streams.hpp): the recorded work, replayed in order by
// cudaGraphLaunch on any stream. Ending an invalidated capture gives
// cudaErrorStreamCaptureInvalidated, whose text names what invalidated it.
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  a->type = tessera::emu::is_device_memory(p) ? cudaMemoryTypeDevice
            : tessera::emu::is_page_locked(p) ? cudaMemoryTypeHost
                                              : cudaMemoryTypeUnregistered;
  a->device = 0;
  return cudaSuccess;
}
