#include "device_probe.hpp"

#include <algorithm>

namespace tessera::mma {

std::string cuda_error(const std::string& what, cudaError_t e) {
  return what + ": " + cudaGetErrorString(e);
}

bool built_for(int major, int minor) {
  const std::string archs = TESSERA_MMA_CUDA_ARCHS;
  size_t at = 0;
  while (at <= archs.size()) {
    const size_t end = std::min(archs.find_first_of(";, ", at), archs.size());
    std::string arch = archs.substr(at, end - at);
    at = end + 1;
    if (arch.empty()) {
      continue;
    }
    const bool specific = arch.back() == 'a' || arch.back() == 'f';
    if (specific) {
      arch.pop_back();
    }
    const int value = std::stoi(arch);
    const int want = major * 10 + minor;
    if (specific ? value == want
                 : (major == value / 10 && minor >= value % 10) || major > value / 10) {
      return true;
    }
  }
  return false;
}

std::string probe_device(int32_t ordinal, DeviceLimits& limits) {
  int count = 0;  // left unwritten when there is no driver (TOOLCHAIN.md §3)
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    return cuda_error("no CUDA device: cudaGetDeviceCount failed", e);
  }
  if (count == 0) {
    return "no CUDA device: cudaGetDeviceCount found none";
  }
  if (ordinal < 0 || ordinal >= count) {
    return "CUDA device " + std::to_string(ordinal) + " does not exist (" + std::to_string(count) +
           " found)";
  }
  int major = 0, minor = 0, sms = 0, smem_block = 0, smem_sm = 0;
  const cudaDeviceAttr attrs[] = {cudaDevAttrComputeCapabilityMajor,
                                  cudaDevAttrComputeCapabilityMinor, cudaDevAttrMultiProcessorCount,
                                  cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                  cudaDevAttrMaxSharedMemoryPerMultiprocessor};
  int* values[] = {&major, &minor, &sms, &smem_block, &smem_sm};
  for (int i = 0; i < 5; ++i) {
    if (const cudaError_t a = cudaDeviceGetAttribute(values[i], attrs[i], ordinal);
        a != cudaSuccess) {
      return cuda_error("cudaDeviceGetAttribute", a);
    }
  }
  if (!built_for(major, minor)) {
    return "mma attention was built for sm " TESSERA_MMA_CUDA_ARCHS "; CUDA device " +
           std::to_string(ordinal) + " has compute capability " + std::to_string(major) + "." +
           std::to_string(minor);
  }
  limits.sm_count = sms;
  limits.smem_per_block = smem_block;
  limits.smem_per_sm = smem_sm;
  return "";
}

std::string check_device_pointer(const void* p, const char* name) {
  cudaPointerAttributes attributes{};
  const cudaError_t e = cudaPointerGetAttributes(&attributes, p);
  if (e != cudaSuccess) {
    return cuda_error(std::string("cudaPointerGetAttributes(") + name + ")", e);
  }
  if (attributes.type == cudaMemoryTypeUnregistered) {
    return std::string(name) + " is host memory; the mma backend needs device memory";
  }
  return "";
}

}  // namespace tessera::mma
