// libtessera_cuda.so: the CUDA runtime calls of the core behind the C table of device_api.h.
// Linked with the shared cudart only (never the driver stub), loaded with dlopen on demand.
#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "device_api.h"
#include "tessera/plugin_sdk.hpp"

namespace {

using tessera::sdk::fail;
using tessera::sdk::ok;

ts_status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return ok();
  return fail(e == cudaErrorMemoryAllocation ? TS_ERR_OUT_OF_MEMORY : TS_ERR_INTERNAL,
              std::string(what) + ": " + cudaGetErrorString(e));
}

ts_status select(int32_t ordinal) { return cuda_status(cudaSetDevice(ordinal), "cudaSetDevice"); }

ts_status device_count(int32_t* count) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (count == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "count is null");
    int n = 0;  // left unwritten when there is no driver
    *count = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
      return fail(TS_ERR_UNSUPPORTED, std::string("no CUDA device: ") + cudaGetErrorString(e));
    if (n == 0) return fail(TS_ERR_UNSUPPORTED, "no CUDA device: the driver reports none");
    *count = n;
    return ok();
  });
}

ts_status describe(int32_t ordinal, ts_cuda_device_info* out) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (out == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "out is null");
    cudaDeviceProp prop{};
    if (ts_status s =
            cuda_status(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
        s.code != TS_OK)
      return s;
    if (ts_status s = select(ordinal); s.code != TS_OK) return s;
    ts_cuda_device_info info{};
    info.ordinal = ordinal;
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    info.multiprocessors = prop.multiProcessorCount;
    size_t free_bytes = 0, total_bytes = 0;
    if (ts_status s = cuda_status(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
        s.code != TS_OK)
      return s;
    info.free_bytes = free_bytes;
    info.total_bytes = total_bytes;
    cudaDriverGetVersion(&info.driver_version);
    cudaRuntimeGetVersion(&info.runtime_version);
    std::strncpy(info.name, prop.name, sizeof info.name - 1);
    *out = info;
    return ok();
  });
}

ts_status allocate(int32_t ordinal, size_t bytes, void** out) {
  if (out == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "out is null");
  *out = nullptr;
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaMalloc(out, bytes == 0 ? 1 : bytes),
                     ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str());
}

ts_status release(int32_t ordinal, void* memory) {
  if (memory == nullptr) return ok();
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaFree(memory), "cudaFree");
}

ts_status copy(int32_t ordinal, void* dst, const void* src, size_t bytes, int32_t kind,
               void* stream) {
  cudaMemcpyKind k;
  switch (kind) {
    case TS_COPY_HOST_TO_DEVICE:
      k = cudaMemcpyHostToDevice;
      break;
    case TS_COPY_DEVICE_TO_HOST:
      k = cudaMemcpyDeviceToHost;
      break;
    case TS_COPY_DEVICE_TO_DEVICE:
      k = cudaMemcpyDeviceToDevice;
      break;
    default:
      return fail(TS_ERR_INVALID_ARGUMENT, "unknown copy kind " + std::to_string(kind));
  }
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaMemcpyAsync(dst, src, bytes, k, static_cast<cudaStream_t>(stream)),
                     "cudaMemcpyAsync");
}

ts_status fill(int32_t ordinal, void* dst, int32_t byte, size_t bytes, void* stream) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaMemsetAsync(dst, byte, bytes, static_cast<cudaStream_t>(stream)),
                     "cudaMemsetAsync");
}

ts_status stream_create(int32_t ordinal, void** out) {
  if (out == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "out is null");
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  cudaStream_t stream = nullptr;
  ts_status s =
      cuda_status(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  *out = stream;
  return s;
}

ts_status stream_destroy(int32_t ordinal, void* stream) {
  if (stream == nullptr) return ok();
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaStreamDestroy(static_cast<cudaStream_t>(stream)), "cudaStreamDestroy");
}

ts_status stream_synchronize(int32_t ordinal, void* stream) {
  if (ts_status s = select(ordinal); s.code != TS_OK) return s;
  return cuda_status(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
                     "cudaStreamSynchronize");
}

const ts_cuda_device_api kApi = {sizeof(ts_cuda_device_api),
                                 TS_CUDA_DEVICE_API_VERSION,
                                 device_count,
                                 describe,
                                 allocate,
                                 release,
                                 copy,
                                 fill,
                                 stream_create,
                                 stream_destroy,
                                 stream_synchronize};

}  // namespace

extern "C" __attribute__((visibility("default"))) const ts_cuda_device_api*
tessera_cuda_device_entry(void) {
  return &kApi;
}
