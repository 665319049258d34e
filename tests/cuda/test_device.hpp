// Device memory for the attention_mma tests and benchmark, on a CUDA device or, in the emulator
// build (TESSERA_TEST_EMULATED), on the SIMT emulator inside the emulated plugin, whose
// allocator is taken from the plugin so that its cp.async bounds checks know every buffer.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tessera::cudatest {

struct Backend {
  std::string description;  // e.g. "NVIDIA H200, compute capability 9.0, 132 SMs"
  std::string unavailable;  // why there is no device to run on ("" when there is one)
};

// plugin_handle: the dlopen handle of the plugin under test.
Backend open_backend(void* plugin_handle);
bool emulated();
void* device_alloc(size_t bytes);
void device_free(void* p) noexcept;
void copy_to_device(void* dst, const void* src, size_t bytes);
void copy_to_host(void* dst, const void* src, size_t bytes);
void synchronize();  // waits for the device; throws std::runtime_error on a device error

template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t n) : n_(n), p_(static_cast<T*>(device_alloc(n * sizeof(T)))) {}
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
  DeviceArray(DeviceArray&& o) noexcept
      : n_(std::exchange(o.n_, 0)), p_(std::exchange(o.p_, nullptr)) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(n_, o.n_);
    std::swap(p_, o.p_);
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { device_free(p_); }

  T* get() const { return p_; }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& host) {
    if (host.size() != n_) throw std::logic_error("DeviceArray::upload: size mismatch");
    copy_to_device(p_, host.data(), n_ * sizeof(T));
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    copy_to_host(host.data(), p_, n_ * sizeof(T));
    return host;
  }

 private:
  size_t n_ = 0;
  T* p_ = nullptr;
};

}  // namespace tessera::cudatest
