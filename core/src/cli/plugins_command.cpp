// tessera plugins [--json] [--plugin-dir DIR]... [--no-default-path]: every plugin found on the
// search path (name, kind, version, ABI, path, build info, capabilities, options schema) and every
// file that was refused, with the reason and the fix.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "plugins/registry.hpp"
#include "util/check.hpp"

namespace tessera::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct PluginsArgs {
  bool as_json = false;
  bool no_default_path = false;
  std::vector<std::string> plugin_dirs;
};

std::vector<const LoadedPlugin*> sorted_plugins(const PluginRegistry& registry) {
  std::vector<const LoadedPlugin*> out;
  for (const LoadedPlugin& p : registry.plugins()) out.push_back(&p);
  std::sort(out.begin(), out.end(), [](const LoadedPlugin* a, const LoadedPlugin* b) {
    return std::pair(static_cast<int>(a->kind()), a->name()) <
           std::pair(static_cast<int>(b->kind()), b->name());
  });
  return out;
}

json plugin_json(const LoadedPlugin& p) {
  return json{
      {"name", p.name()},
      {"kind", kind_name(p.kind())},
      {"version", p.version()},
      {"abi", {{"major", p.descriptor->abi_major}, {"minor", p.descriptor->abi_minor}}},
      {"path", p.path.string()},
      {"build_info", p.build_info},
      {"capabilities", p.capabilities},
      {"options_schema", p.options_schema->document()},
  };
}

json report_json(const PluginRegistry& registry) {
  json report;
  report["host"] = {{"version", TESSERA_VERSION},
                    {"abi", {{"major", TS_ABI_MAJOR}, {"minor", TS_ABI_MINOR}}}};
  report["search_path"] = json::array();
  for (const fs::path& dir : registry.searched_directories()) {
    std::error_code ec;
    report["search_path"].push_back(
        {{"path", dir.string()}, {"exists", fs::is_directory(dir, ec)}});
  }
  report["plugins"] = json::array();
  for (const LoadedPlugin* p : sorted_plugins(registry))
    report["plugins"].push_back(plugin_json(*p));
  report["failures"] = json::array();
  for (const auto& f : registry.failures()) {
    json failure = {{"path", f.path.string()}, {"reason", f.reason}};
    if (!f.name.empty()) failure["name"] = f.name;
    report["failures"].push_back(std::move(failure));
  }
  return report;
}

// ["cpu", "cuda"] -> "cpu, cuda"; other values as compact JSON.
std::string render(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array() && std::all_of(value.begin(), value.end(), [](const json& v) {
        return v.is_string() || v.is_number();
      })) {
    std::string out;
    for (const json& v : value) out += (out.empty() ? "" : ", ") + render(v);
    return out.empty() ? "(none)" : out;
  }
  return value.dump();
}

// One line per option: name, type, allowed values or range, default, description.
std::vector<std::string> option_lines(const json& schema) {
  std::vector<std::string> lines;
  const auto props = schema.find("properties");
  if (props == schema.end() || props->empty()) return lines;
  for (const auto& [name, sub] : props->items()) {
    std::string line = fmt::format("{:<20} {}", name, render(sub.value("type", json("any"))));
    if (const auto items = sub.find("items"); items != sub.end())
      line += " of " + render(items->value("type", json("any")));
    if (const auto e = sub.find("enum"); e != sub.end()) line += " one of " + e->dump();
    const bool has_min = sub.contains("minimum") || sub.contains("exclusiveMinimum");
    const bool has_max = sub.contains("maximum") || sub.contains("exclusiveMaximum");
    if (has_min || has_max) {
      line += fmt::format(
          " {}{}, {}{}", sub.contains("exclusiveMinimum") ? "(" : "[",
          has_min ? sub.value("minimum", sub.value("exclusiveMinimum", json())).dump() : "-inf",
          has_max ? sub.value("maximum", sub.value("exclusiveMaximum", json())).dump() : "inf",
          sub.contains("exclusiveMaximum") ? ")" : "]");
    }
    if (const auto d = sub.find("default"); d != sub.end()) line += " default " + d->dump();
    if (const auto d = sub.find("description"); d != sub.end() && d->is_string())
      line += " — " + d->get<std::string>();
    lines.push_back(std::move(line));
  }
  return lines;
}

void print_text(const PluginRegistry& registry) {
  fmt::print("Tessera {}, plugin ABI {}.{}\n\nSearch path:\n", TESSERA_VERSION, TS_ABI_MAJOR,
             TS_ABI_MINOR);
  for (const fs::path& dir : registry.searched_directories()) {
    std::error_code ec;
    fmt::print("  {}{}\n", dir.string(), fs::is_directory(dir, ec) ? "" : "  (missing)");
  }
  const auto plugins = sorted_plugins(registry);
  fmt::print("\nPlugins ({}):\n", plugins.size());
  if (plugins.empty()) fmt::print("  (none)\n");
  for (const LoadedPlugin* p : plugins) {
    fmt::print("  {:<10} {:<22} {:<12} ABI {}.{}\n", kind_name(p->kind()), p->name(), p->version(),
               p->descriptor->abi_major, p->descriptor->abi_minor);
    fmt::print("    path:         {}\n", p->path.string());
    std::string build;
    for (const auto& [key, value] : p->build_info.items())
      build += fmt::format("{}{}={}", build.empty() ? "" : ", ", key, render(value));
    fmt::print("    build:        {}\n", build.empty() ? "(not given)" : build);
    for (const auto& [key, value] : p->capabilities.items())
      fmt::print("    {:<13} {}\n", key + ":", render(value));
    const auto options = option_lines(p->options_schema->document());
    if (options.empty()) fmt::print("    options:      (none)\n");
    for (std::size_t i = 0; i < options.size(); ++i)
      fmt::print("    {:<13} {}\n", i == 0 ? "options:" : "", options[i]);
  }
  const auto& failures = registry.failures();
  fmt::print("\nRefused ({}):\n", failures.size());
  if (failures.empty()) fmt::print("  (none)\n");
  for (const auto& f : failures) fmt::print("  {}\n    {}\n", f.path.string(), f.reason);
}

}  // namespace

void add_plugins_command(CLI::App& app) {
  auto args = std::make_shared<PluginsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plugins", "List the plugins found (kind, version, ABI, capabilities, options) and refusals");
  cmd->add_flag("--json", args->as_json, "Print one JSON document instead of text");
  cmd->add_option("--plugin-dir", args->plugin_dirs,
                  "Also search this directory, before the default path (repeatable)")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--no-default-path", args->no_default_path,
                "Search only the --plugin-dir directories (not $TESSERA_PLUGIN_PATH, the "
                "executable's plugins/ or the install dir)");
  cmd->callback([args] {
    std::vector<fs::path> dirs(args->plugin_dirs.begin(), args->plugin_dirs.end());
    if (!args->no_default_path)
      for (const fs::path& dir : PluginRegistry::default_search_path()) dirs.push_back(dir);
    PluginRegistry registry;
    registry.discover(dirs);
    if (args->as_json)
      fmt::print("{}\n", report_json(registry).dump(2));
    else
      print_text(registry);
  });
}

}  // namespace tessera::cli
