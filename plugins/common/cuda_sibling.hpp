// How a plugin that loads on every machine reaches its CUDA code (docs/plugins.md, "Plugins with
// device code"). The plugin links no NVIDIA library; its kernels and the CUDA runtime calls that
// launch them live in a sibling module, built twice from one source: `lib<plugin>_cuda.so` (nvcc,
// linked with the shared cudart; only with TESSERA_CUDA) and `lib<plugin>_cuda_emulated.so` (the
// same sources as C++ for the SIMT emulator). Both sit in `cuda/` beside the plugin's own file,
// out of the registry's sight (it lists only the plugin directory itself). The plugin dlopens the
// one matching ts_host_api.cuda_build the first time a call gets a CUDA device, and never unloads
// it. The module exports one C symbol returning its table, which starts with its struct_size.
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>

#include "tessera/plugin_abi.h"

namespace tessera::sdk {

// The build a host asks for: ts_host_api.cuda_build when the table has it, else native.
inline int32_t cuda_build_of(const ts_host_api* host) {
  if (host == nullptr || host->struct_size < offsetof(ts_host_api, cuda_build) + sizeof(void*) ||
      host->cuda_build == nullptr) {
    return TS_CUDA_BUILD_NATIVE;
  }
  return host->cuda_build(host->ctx);
}

// The path of the shared object holding `anchor` (an address inside the calling plugin).
inline std::filesystem::path file_of(const void* anchor) {
  Dl_info info{};
  if (dladdr(anchor, &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  return std::filesystem::path(info.dli_fname);
}

// Where the sibling module of the plugin holding `anchor` is: <plugin dir>/cuda/lib<base>_cuda.so
// or lib<base>_cuda_emulated.so.
inline std::filesystem::path cuda_sibling_path(const void* anchor, const std::string& base,
                                               int32_t build) {
  const std::string file =
      "lib" + base + (build == TS_CUDA_BUILD_EMULATED ? "_cuda_emulated.so" : "_cuda.so");
  return file_of(anchor).parent_path() / "cuda" / file;
}

// "" when either build of the sibling module of the plugin holding `anchor` is installed, else
// the paths looked for (check_support() cannot know which build create() will ask for).
inline std::string find_cuda_sibling(const void* anchor, const std::string& base) {
  std::string looked;
  for (int32_t build : {TS_CUDA_BUILD_NATIVE, TS_CUDA_BUILD_EMULATED}) {
    const std::filesystem::path path = cuda_sibling_path(anchor, base, build);
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
      return "";
    }
    looked += (looked.empty() ? "" : ", ") + path.string();
  }
  return looked;
}

// Loads a plugin's sibling module once per instance (thread-safe) and returns its table, or
// null with `why` saying what was looked for and what went wrong.
template <class Table>
class CudaSibling {
 public:
  CudaSibling(std::string base, std::string entry_symbol)
      : base_(std::move(base)), entry_(std::move(entry_symbol)) {}

  const Table* get(const void* anchor, int32_t build, std::string& why) {
    std::lock_guard lock(mutex_);
    if (table_ == nullptr && why_.empty()) {
      open(anchor, build);
    }
    why = why_;
    return table_;
  }

 private:
  void open(const void* anchor, int32_t build) {
    const std::filesystem::path path = cuda_sibling_path(anchor, base_, build);
    const char* kind = build == TS_CUDA_BUILD_EMULATED ? "emulated" : "native";
    const std::string what = "the " + std::string(kind) + " CUDA module of this plugin";
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      why_ = what + " is not installed: looked for " + path.string();
      return;
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      why_ = "cannot load " + what + " " + path.string() + ": " + dlerror();
      return;
    }
    using Entry = const Table* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, entry_.c_str()));
    const Table* table = entry != nullptr ? entry() : nullptr;
    if (table == nullptr || table->struct_size < sizeof(Table)) {
      why_ = path.string() + " does not export " + entry_ + " with a table of " +
             std::to_string(sizeof(Table)) + " bytes";
      return;
    }
    table_ = table;
  }

  std::string base_, entry_;
  std::mutex mutex_;
  const Table* table_ = nullptr;
  std::string why_;
};

}  // namespace tessera::sdk
