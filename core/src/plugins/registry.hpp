// PluginRegistry: finds plugin shared objects, loads them with Boost.DLL (rtld_now|rtld_local),
// checks their ABI, validates their options and creates instances. Libraries stay loaded for the
// life of the registry (keep the registry alive longer than every instance).
//
// Thread-safety: discover()/load() from one thread at start-up; find()/create() afterwards from any
// thread (read-only). References returned by load()/find() stay valid for the registry's life.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/plugin_abi.h"
#include "util/json_schema.hpp"
#include "util/plugin_instance.hpp"

namespace tessera {

struct LoadedPlugin {
  std::filesystem::path path;
  const ts_plugin_descriptor* descriptor = nullptr;  // points into the loaded library
  ts_plugin_kind kind() const { return static_cast<ts_plugin_kind>(descriptor->kind); }
  std::string_view name() const { return descriptor->name; }
  std::string_view version() const { return descriptor->version; }
  // Parsed from the descriptor at load (a plugin whose JSON does not parse is refused):
  nlohmann::json build_info;    // {"compiler": .., "cuda": .., "sm": [..]} or {}
  nlohmann::json capabilities;  // {"devices": ["cpu"], ...} or {}
  std::shared_ptr<const util::JsonSchema> options_schema;  // never null
};

// "attention" | "kv_cache" | "sampler" | "frontend" <-> enum.
std::string_view kind_name(ts_plugin_kind kind);
ts_plugin_kind parse_kind(std::string_view name);  // throws tessera::Error on unknown

// "cpu" or "cuda:1", for messages.
std::string device_name(ts_device device);

class PluginRegistry {
 public:
  PluginRegistry();
  ~PluginRegistry();
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // Default search path: $TESSERA_PLUGIN_PATH (colon-separated), <exe dir>/plugins,
  // <exe dir>/../lib/tessera/plugins, and the install dir compiled in. Duplicates removed.
  static std::vector<std::filesystem::path> default_search_path();

  // Loads every lib*.so in the directories (sorted by name; directories that do not exist are
  // skipped). Files that fail to load are recorded in failures() (a scan never stops on one bad
  // file). When two files hold the same kind and name, the first one found wins and the second is
  // recorded as a failure.
  void discover(const std::vector<std::filesystem::path>& directories);
  // Loads one file explicitly; throws tessera::Error with the path, the reason and the fix
  // (missing file, not a shared object, no entry symbol, ABI major mismatch, minor too new).
  // Loading a file already loaded returns the same plugin.
  const LoadedPlugin& load(const std::filesystem::path& file);

  // Finds a plugin by kind and name; throws tessera::Error listing what exists (and the failures
  // seen for that name) when absent, or naming the actual kind when the name exists with another.
  const LoadedPlugin& find(ts_plugin_kind kind, std::string_view name) const;

  // Validates options_json against the plugin's schema (unknown keys, types, ranges); throws
  // tessera::Error naming the plugin, every offending key and the expected type.
  void validate_options(const LoadedPlugin& plugin, const std::string& options_json) const;
  // validate_options, then the options with the schema's defaults filled in: what create() hands
  // to the plugin. "" means {}.
  std::string normalized_options(const LoadedPlugin& plugin, const std::string& options_json) const;

  // validate_options + check_support + create; the plugin's own message surfaces on failure.
  PluginInstance create(const LoadedPlugin& plugin, const std::string& options_json,
                        ts_device device) const;

  const std::vector<LoadedPlugin>& plugins() const;
  struct Failure {
    std::filesystem::path path;
    std::string reason;  // what is wrong and the fix
    std::string name;    // the plugin's name when its descriptor could be read, else ""
  };
  const std::vector<Failure>& failures() const;
  // Every directory discover() was asked to scan, in order.
  const std::vector<std::filesystem::path>& searched_directories() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tessera
