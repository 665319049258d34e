// Config's own helpers: locations, the list of plugins it asks for, defaults, file reading.
#include "config/config.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "config/config_schema.hpp"

namespace tessera {

namespace {

std::string join_diagnostics(const std::vector<ConfigDiagnostic>& diagnostics) {
  std::string text;
  for (const ConfigDiagnostic& d : diagnostics) {
    if (!text.empty()) {
      text += '\n';
    }
    text += d.to_string();
  }
  return text;
}

}  // namespace

std::string SourceLocation::to_string() const {
  return fmt::format("{}:{}:{}", file, line, column);
}

std::string ConfigDiagnostic::to_string() const {
  return fmt::format("{}: {}", where.to_string(), message);
}

ConfigError::ConfigError(std::vector<ConfigDiagnostic> diagnostics)
    : Error(join_diagnostics(diagnostics)), diagnostics_(std::move(diagnostics)) {}

SourceLocation Config::location_of(std::string_view dotted_path) const {
  std::string_view path = dotted_path;
  while (!path.empty()) {
    if (auto it = locations.find(path); it != locations.end()) {
      return it->second;
    }
    const auto dot = path.rfind('.');
    path = dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
  }
  return SourceLocation{source_name, 1, 1};
}

std::vector<PluginUse> Config::plugin_uses() const {
  std::vector<PluginUse> uses;
  const auto add_section = [&](ts_plugin_kind kind, std::string_view table, const std::string& name,
                               const std::string& options) {
    const std::string plugin_key = fmt::format("{}.plugin", table);
    const std::string options_key = fmt::format("{}.options", table);
    const SourceLocation name_location = location_of(plugin_key);
    uses.push_back(
        PluginUse{kind, name, options, fmt::format("[{}]", table), name_location,
                  locations.count(options_key) ? location_of(options_key) : name_location});
  };
  add_section(TS_KIND_KV_CACHE, "kv_cache", kv_cache.plugin, kv_cache.options_json);
  add_section(TS_KIND_ATTENTION, "attention", attention.plugin, attention.options_json);
  add_section(TS_KIND_SAMPLER, "sampler", sampler.plugin, sampler.options_json);
  for (std::size_t i = 0; i < frontends.size(); ++i) {
    const FrontendSection& f = frontends[i];
    uses.push_back(PluginUse{TS_KIND_FRONTEND, f.plugin, f.options_json,
                             fmt::format("[[frontend]] entry {}", i + 1), f.plugin_location,
                             f.table_location});
  }
  for (const AbArm& arm : ab.arms) {
    // Only the tables the arm writes: the others are the top-level ones, already listed.
    const auto add_arm = [&](ts_plugin_kind kind, std::string_view table, const std::string& name,
                             const std::string& options) {
      const std::string prefix = fmt::format("ab.{}.{}", arm.name, table);
      if (!locations.count(prefix)) {
        return;
      }
      add_section(kind, prefix, name, options);
    };
    add_arm(TS_KIND_KV_CACHE, "kv_cache", arm.kv_cache.plugin, arm.kv_cache.options_json);
    add_arm(TS_KIND_ATTENTION, "attention", arm.attention.plugin, arm.attention.options_json);
    add_arm(TS_KIND_SAMPLER, "sampler", arm.sampler.plugin, arm.sampler.options_json);
  }
  return uses;
}

Config Config::for_arm(std::size_t index) const {
  TS_CHECK(index < ab.arms.size(), "[ab] has no arm {}", index);
  Config config = *this;
  const AbArm& arm = ab.arms[index];
  config.kv_cache = arm.kv_cache;
  config.attention = arm.attention;
  config.sampler = arm.sampler;
  return config;
}

Config default_config() {
  Config config;
  config_schema::apply_defaults(config);
  return config;
}

Config load_config_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(
        fmt::format("cannot open config file `{}`: {}", path.string(), std::strerror(errno)));
  }
  std::string text(kMaxConfigFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) {
    throw Error(fmt::format("cannot read config file `{}`", path.string()));
  }
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxConfigFileBytes) {
    throw Error(fmt::format("config file `{}` is larger than {} bytes", path.string(),
                            kMaxConfigFileBytes));
  }
  return load_config_string(text, path.string());
}

}  // namespace tessera
