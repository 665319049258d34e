// Test-side access to kv-cache format plugins: loads the real .so files through
// tessera::PluginRegistry and wraps describe / store / load with statuses the tests can inspect.
//
// Plugins are looked for in TESSERA_PLUGIN_DIR (where the in-tree plugins land), or in the
// directories of $TESSERA_KV_PLUGIN_DIR (colon-separated) when that is set: that is how a third
// party runs the conformance suite against its own format (docs/kvcache.md).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "plugins/registry.hpp"
#include "tessera/plugin_abi.h"
#include "util/plugin_instance.hpp"

namespace tessera::kv_test {

inline constexpr ts_device kCpu{TS_DEVICE_CPU, 0, nullptr};
inline constexpr ts_device kCuda{TS_DEVICE_CUDA, 0, nullptr};

inline bool plugin_dir_overridden() { return std::getenv("TESSERA_KV_PLUGIN_DIR") != nullptr; }

inline std::vector<std::filesystem::path> kv_plugin_dirs() {
  std::vector<std::filesystem::path> dirs;
  if (const char* env = std::getenv("TESSERA_KV_PLUGIN_DIR")) {
    std::stringstream list(env);
    for (std::string dir; std::getline(list, dir, ':');)
      if (!dir.empty()) dirs.emplace_back(dir);
  } else {
    dirs.emplace_back(TESSERA_PLUGIN_DIR);
  }
  return dirs;
}

// One registry for the whole test binary: it must outlive every instance it creates.
inline PluginRegistry& registry() {
  static PluginRegistry* instance = [] {
    auto* r = new PluginRegistry();  // never destroyed: plugins stay loaded until exit
    r->discover(kv_plugin_dirs());
    return r;
  }();
  return *instance;
}

// Names of every kv-cache plugin found, sorted as discovered.
inline std::vector<std::string> kv_plugin_names() {
  std::vector<std::string> names;
  for (const LoadedPlugin& p : registry().plugins())
    if (p.kind() == TS_KIND_KV_CACHE) names.emplace_back(p.name());
  return names;
}

class KvPlugin {
 public:
  explicit KvPlugin(const std::string& name, const std::string& options = "{}")
      : loaded_(&registry().find(TS_KIND_KV_CACHE, name)),
        instance_(registry().create(*loaded_, options, kCpu)),
        table_(&instance_.table<ts_kv_cache_table>()) {}

  const LoadedPlugin& loaded() const { return *loaded_; }
  const ts_kv_cache_table& table() const { return *table_; }
  ts_instance* self() const { return instance_.get(); }
  std::string name() const { return std::string(loaded_->name()); }

  ts_status describe(int32_t stream, int32_t dim, int32_t rope_dim, int32_t entries_per_page,
                     ts_kv_layout* out) const {
    return table_->describe(self(), stream, dim, rope_dim, entries_per_page, out);
  }
  // describe() that must succeed (fails the test otherwise).
  ts_kv_layout layout(int32_t stream, int32_t dim, int32_t rope_dim,
                      int32_t entries_per_page) const {
    ts_kv_layout l{};
    const ts_status s = describe(stream, dim, rope_dim, entries_per_page, &l);
    EXPECT_EQ(s.code, TS_OK) << name() << ": describe(" << stream << ", " << dim << ", " << rope_dim
                             << ", " << entries_per_page << "): " << (s.message ? s.message : "");
    return l;
  }
  ts_status store(const ts_kv_layout& l, const float* rows, int64_t n, const int64_t* slots,
                  uint8_t* pool, ts_device device = kCpu) const {
    return table_->store(self(), &l, rows, n, slots, pool, device);
  }
  ts_status load(const ts_kv_layout& l, const uint8_t* pool, const int64_t* slots, int64_t n,
                 float* rows, ts_device device = kCpu) const {
    return table_->load(self(), &l, pool, slots, n, rows, device);
  }

 private:
  const LoadedPlugin* loaded_;
  PluginInstance instance_;
  const ts_kv_cache_table* table_;
};

inline std::string message(const ts_status& s) { return s.message ? s.message : "(no message)"; }

}  // namespace tessera::kv_test
