#include <cuda_runtime.h>

#include "test_device.hpp"

namespace tessera::cudatest {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

Backend open_backend(void*) {
  Backend b;
  int count = 0;  // left unwritten without a driver
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    b.unavailable = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return b;
  }
  if (count == 0) {
    b.unavailable = "cudaGetDeviceCount found no device";
    return b;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  check(cudaSetDevice(0), "cudaSetDevice");
  b.description = std::string(prop.name) + ", compute capability " + std::to_string(prop.major) +
                  "." + std::to_string(prop.minor) + ", " +
                  std::to_string(prop.multiProcessorCount) + " SMs, " +
                  std::to_string(prop.totalGlobalMem >> 30) + " GiB";
  return b;
}

bool emulated() { return false; }

void* device_alloc(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc");
  return p;
}

void device_free(void* p) noexcept {
  if (p != nullptr) cudaFree(p);
}

void copy_to_device(void* dst, const void* src, size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
}

void copy_to_host(void* dst, const void* src, size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}

void synchronize() {
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  check(cudaGetLastError(), "after synchronize");
}

}  // namespace tessera::cudatest
