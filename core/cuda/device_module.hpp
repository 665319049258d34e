// Header-only loader of the CUDA device module (device_api.h) for the core: dlopen on demand,
// RAII for device memory and streams. Nothing here links CUDA; if the module or the NVIDIA
// libraries are missing, DeviceModule::load throws with the loader's reason
// ("libcudart.so.13: cannot open shared object file ...").
#pragma once

#include <dlfcn.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "device_api.h"

namespace tessera::cuda {

class DeviceModule {
 public:
  // path: the module file (TESSERA_CUDA_MODULE_PATH in the build tree, the install's
  // lib/tessera/libtessera_cuda.so otherwise). Stays loaded for the life of the process.
  static DeviceModule load(const std::string& path) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr)
      throw std::runtime_error("cannot load the CUDA device module " + path + ": " + dlerror());
    auto entry =
        reinterpret_cast<ts_cuda_device_entry_fn>(dlsym(handle, TS_CUDA_DEVICE_ENTRY_SYMBOL));
    const ts_cuda_device_api* api = entry != nullptr ? entry() : nullptr;
    if (api == nullptr || api->struct_size < sizeof(ts_cuda_device_api) ||
        api->version != TS_CUDA_DEVICE_API_VERSION)
      throw std::runtime_error(path + " is not a CUDA device module of version " +
                               std::to_string(TS_CUDA_DEVICE_API_VERSION));
    return DeviceModule(api);
  }

  const ts_cuda_device_api& api() const { return *api_; }

  // Throws with the module's message unless s is TS_OK.
  static void check(ts_status s, const char* what) {
    if (s.code != TS_OK)
      throw std::runtime_error(std::string(what) + ": " + (s.message ? s.message : "?"));
  }

 private:
  explicit DeviceModule(const ts_cuda_device_api* api) : api_(api) {}
  const ts_cuda_device_api* api_;
};

// Device memory owned by the core (handed to plugins as workspaces, pools, tensors).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceModule& module, int32_t ordinal, size_t bytes)
      : api_(&module.api()), ordinal_(ordinal), bytes_(bytes) {
    DeviceModule::check(api_->allocate(ordinal, bytes, &data_), "allocate");
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (data_ != nullptr) api_->release(ordinal_, data_);
  }
  [[nodiscard]] void* data() const { return data_; }
  [[nodiscard]] size_t size() const { return bytes_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(api_, o.api_);
    std::swap(ordinal_, o.ordinal_);
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
  }
  const ts_cuda_device_api* api_ = nullptr;
  int32_t ordinal_ = 0;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// A non-blocking stream owned by the core (one per rank; plugins get it in ts_device).
class DeviceStream {
 public:
  DeviceStream(const DeviceModule& module, int32_t ordinal)
      : api_(&module.api()), ordinal_(ordinal) {
    DeviceModule::check(api_->stream_create(ordinal, &stream_), "stream_create");
  }
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;
  ~DeviceStream() { api_->stream_destroy(ordinal_, stream_); }
  [[nodiscard]] void* get() const { return stream_; }
  void synchronize() const {
    DeviceModule::check(api_->stream_synchronize(ordinal_, stream_), "synchronize");
  }

 private:
  const ts_cuda_device_api* api_;
  int32_t ordinal_;
  void* stream_ = nullptr;
};

}  // namespace tessera::cuda
