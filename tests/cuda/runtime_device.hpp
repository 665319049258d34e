// Device memory and a stream for the tests of plugins with a CUDA module (kvcache_bf16,
// attention_reference): the CUDA runtime itself, or with TESSERA_DEVICE_EMULATION the SIMT
// emulator's (libtessera_emulator.so, the process's one emulator, which the plugins' emulated
// modules share). Also the host table the plugins get, saying which build of their CUDA code to
// load.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tessera/plugin_abi.h"

#ifdef TESSERA_DEVICE_EMULATION
#include "cuda_runtime_emulation.hpp"
#else
#include <cuda_runtime.h>
#endif

namespace tessera::cudatest {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

inline int32_t test_cuda_build(void*) {
#ifdef TESSERA_DEVICE_EMULATION
  return TS_CUDA_BUILD_EMULATED;
#else
  return TS_CUDA_BUILD_NATIVE;
#endif
}

// What the registry hands a plugin's create(), with cuda_build naming this test's build.
inline ts_host_api test_host_api() {
  ts_host_api api{};
  api.struct_size = sizeof api;
  api.abi_major = TS_ABI_MAJOR;
  api.abi_minor = TS_ABI_MINOR;
  api.cuda_build = &test_cuda_build;
  return api;
}

// "" when CUDA device 0 exists, else why not.
inline std::string device_unavailable() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
  return count == 0 ? "cudaGetDeviceCount found no device" : "";
}

class TestStream {
 public:
  TestStream() { check_cuda(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "stream"); }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  ~TestStream() { cudaStreamDestroy(s_); }
  cudaStream_t get() const { return s_; }
  void synchronize() const { check_cuda(cudaStreamSynchronize(s_), "cudaStreamSynchronize"); }
  ts_device device() const { return ts_device{TS_DEVICE_CUDA, 0, s_}; }

 private:
  cudaStream_t s_ = nullptr;
};

// Page-locked host memory (cudaHostAlloc), as the core's step arena gives plugins
// (ts_attention_inputs.host_workspace).
class PageLockedBytes {
 public:
  explicit PageLockedBytes(size_t bytes) {
    check_cuda(cudaHostAlloc(&p_, bytes == 0 ? 1 : bytes, cudaHostAllocPortable), "cudaHostAlloc");
  }
  PageLockedBytes(const PageLockedBytes&) = delete;
  PageLockedBytes& operator=(const PageLockedBytes&) = delete;
  ~PageLockedBytes() { cudaFreeHost(p_); }
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

// Device memory holding n values of T; copies go through `stream` and wait for it.
template <class T>
class DeviceVector {
 public:
  DeviceVector() = default;
  DeviceVector(const std::vector<T>& host, const TestStream& stream) : n_(host.size()) {
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, n_ == 0 ? 1 : n_ * sizeof(T)), "cudaMalloc");
    p_ = static_cast<T*>(p);
    upload(host, stream);
  }
  DeviceVector(DeviceVector&& o) noexcept
      : n_(std::exchange(o.n_, 0)), p_(std::exchange(o.p_, nullptr)) {}
  DeviceVector& operator=(DeviceVector&& o) noexcept {
    std::swap(n_, o.n_);
    std::swap(p_, o.p_);
    return *this;
  }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;
  ~DeviceVector() {
    if (p_ != nullptr) cudaFree(p_);
  }

  T* get() const { return p_; }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& host, const TestStream& stream) {
    if (host.size() != n_) throw std::logic_error("DeviceVector::upload: size mismatch");
    check_cuda(
        cudaMemcpyAsync(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice, stream.get()),
        "copy to device");
    stream.synchronize();
  }
  std::vector<T> download(const TestStream& stream) const {
    std::vector<T> host(n_);
    check_cuda(
        cudaMemcpyAsync(host.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost, stream.get()),
        "copy to host");
    stream.synchronize();
    return host;
  }

 private:
  size_t n_ = 0;
  T* p_ = nullptr;
};

}  // namespace tessera::cudatest
