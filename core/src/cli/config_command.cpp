// tessera config check FILE...: validates configuration files, and the options of every plugin
// they name against that plugin's own schema, without loading a model.
// tessera config docs: prints the Markdown key reference (the generated part of docs/config.md).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "cli/commands.hpp"
#include "config/config.hpp"
#include "config/config_schema.hpp"
#include "plugins/registry.hpp"

namespace tessera::cli {

namespace {

// Where a plugin of `kind` runs: the kv format and attention on the executor's device; samplers
// and frontends on the host whatever the device (the sampler reads logits in host memory).
ts_device device_of(const Config& config, int32_t kind) {
  const bool on_device = kind == TS_KIND_KV_CACHE || kind == TS_KIND_ATTENTION;
  return ts_device{on_device && config.executor.device == "cuda" ? TS_DEVICE_CUDA : TS_DEVICE_CPU,
                   0, nullptr};
}

// Problems the file's own validation cannot see: missing plugin directories, unknown plugins,
// options refused by a plugin's schema or by its check_support for the configured device.
std::vector<ConfigDiagnostic> check_plugins(const Config& config) {
  std::vector<ConfigDiagnostic> problems;
  std::vector<std::filesystem::path> directories;
  for (const std::string& dir : config.plugins.search_path) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      problems.push_back({config.location_of("plugins.search_path"),
                          fmt::format("plugins.search_path: `{}` is not a directory", dir)});
    directories.emplace_back(dir);
  }
  for (const auto& dir : PluginRegistry::default_search_path()) directories.push_back(dir);

  PluginRegistry registry;
  registry.discover(directories);
  for (const PluginUse& use : config.plugin_uses()) {
    const LoadedPlugin* plugin = nullptr;
    try {
      plugin = &registry.find(use.kind, use.name);
    } catch (const Error& e) {
      problems.push_back({use.name_location, fmt::format("{}: {}", use.section, e.what())});
      continue;
    }
    try {
      registry.validate_options(*plugin, use.options_json);
    } catch (const Error& e) {
      problems.push_back({use.options_location, fmt::format("{} options of plugin `{}`: {}",
                                                            use.section, use.name, e.what())});
      continue;
    }
    if (plugin->descriptor->check_support == nullptr) continue;
    const ts_status status =
        plugin->descriptor->check_support(use.options_json.c_str(), device_of(config, use.kind));
    if (status.code != TS_OK)
      problems.push_back(
          {use.name_location,
           fmt::format("{} plugin `{}` does not support this configuration on device \"{}\": {}",
                       use.section, use.name,
                       device_of(config, use.kind).type == TS_DEVICE_CUDA ? "cuda" : "cpu",
                       status.message ? status.message : "(no message)")});
  }
  std::stable_sort(problems.begin(), problems.end(), [](const auto& a, const auto& b) {
    return std::tie(a.where.line, a.where.column) < std::tie(b.where.line, b.where.column);
  });
  return problems;
}

// Prints "FILE: ok" or every problem (to stderr); returns whether the file is valid.
bool check_file(const std::string& file) {
  std::vector<ConfigDiagnostic> problems;
  try {
    problems = check_plugins(load_config_file(file));
  } catch (const ConfigError& e) {
    problems = e.diagnostics();
  } catch (const Error& e) {
    fmt::print(stderr, "{}\n", e.what());
    return false;
  }
  for (const ConfigDiagnostic& problem : problems) fmt::print(stderr, "{}\n", problem.to_string());
  if (problems.empty()) fmt::print("{}: ok\n", file);
  return problems.empty();
}

}  // namespace

void add_config_command(CLI::App& app) {
  CLI::App* config = app.add_subcommand("config", "Check or document the TOML configuration");
  config->require_subcommand(1);

  CLI::App* check = config->add_subcommand(
      "check", "Validate configuration files and their plugin options (no model is loaded)");
  auto files = std::make_shared<std::vector<std::string>>();
  check->add_option("FILE", *files, "Configuration files (TOML)")->required();
  check->callback([files] {
    bool all_ok = true;
    for (const std::string& file : *files) all_ok = check_file(file) && all_ok;
    if (!all_ok) throw CLI::RuntimeError(1);
  });

  CLI::App* docs = config->add_subcommand(
      "docs", "Print the Markdown reference of every key (the generated part of docs/config.md)");
  docs->callback([] { fmt::print("{}", config_schema::render_config_reference()); });
}

}  // namespace tessera::cli
