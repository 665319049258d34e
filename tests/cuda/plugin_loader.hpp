// Loads a plugin .so with dlopen (no Boost: the GPU machine builds these tests with nvcc and g++
// alone) and checks its descriptor the way the registry does for what the tests rely on.
#pragma once

#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "tessera/plugin_abi.h"

namespace tessera::cudatest {

class LoadedPlugin {
 public:
  explicit LoadedPlugin(const std::string& path, int32_t kind = TS_KIND_ATTENTION) {
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) throw std::runtime_error("dlopen " + path + ": " + dlerror());
    auto entry = reinterpret_cast<ts_plugin_entry_fn>(dlsym(handle_, TS_PLUGIN_ENTRY_SYMBOL));
    if (entry == nullptr) throw std::runtime_error(path + " has no " TS_PLUGIN_ENTRY_SYMBOL);
    descriptor_ = entry();
    if (descriptor_ == nullptr || descriptor_->abi_major != TS_ABI_MAJOR ||
        descriptor_->kind != kind || descriptor_->functions == nullptr)
      throw std::runtime_error(path + ": not a plugin of kind " + std::to_string(kind) +
                               " and ABI " + std::to_string(TS_ABI_MAJOR));
  }
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;
  ~LoadedPlugin() = default;  // stays loaded for the process, as in the registry

  void* handle() const { return handle_; }
  const ts_plugin_descriptor& descriptor() const { return *descriptor_; }
  const ts_attention_table& table() const {
    return *static_cast<const ts_attention_table*>(descriptor_->functions);
  }
  template <class Table>
  const Table& functions() const {
    return *static_cast<const Table*>(descriptor_->functions);
  }

 private:
  void* handle_ = nullptr;
  const ts_plugin_descriptor* descriptor_ = nullptr;
};

// Owns an instance created on CUDA device 0.
class AttentionInstance {
 public:
  explicit AttentionInstance(const LoadedPlugin& plugin) : plugin_(plugin) {
    const ts_status s = plugin.descriptor().create(nullptr, "{}", device(), &instance_);
    if (s.code != TS_OK)
      throw std::runtime_error(std::string("create: ") + (s.message ? s.message : "?"));
  }
  AttentionInstance(const AttentionInstance&) = delete;
  AttentionInstance& operator=(const AttentionInstance&) = delete;
  ~AttentionInstance() { plugin_.descriptor().destroy(instance_); }

  static ts_device device() { return ts_device{TS_DEVICE_CUDA, 0, nullptr}; }
  ts_instance* get() const { return instance_; }
  const ts_attention_table& table() const { return plugin_.table(); }

 private:
  const LoadedPlugin& plugin_;
  ts_instance* instance_ = nullptr;
};

}  // namespace tessera::cudatest
