#include "plugins/registry.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstdlib>
#include <deque>
#include <system_error>

#include "plugins/descriptor_check.hpp"
#include "plugins/host_services.hpp"
#include "util/check.hpp"
#include "util/edit_distance.hpp"

namespace tessera {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view kKindNames[] = {"attention", "kv_cache", "sampler", "frontend"};

// A loaded, accepted plugin plus what the host keeps for it. Lives in a deque: addresses stable.
struct Entry {
  LoadedPlugin plugin;
  std::string name;  // owned copy: the host logger's tag
  ts_host_api host{};
};

std::string list_or_none(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Parses a descriptor JSON field; null means "{}". Throws the reason on bad JSON.
json parse_field(const char* text, const char* field) {
  if (text == nullptr || text[0] == '\0') return json::object();
  try {
    json parsed = json::parse(text);
    if (!parsed.is_object())
      throw Error(
          fmt::format("{} must be a JSON object, got {}", field, util::json_type_name(parsed)));
    return parsed;
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("{} is not valid JSON: {}", field, e.what()));
  }
}

// A plugin with no schema takes no options.
constexpr const char* kNoOptionsSchema = R"({"type": "object", "additionalProperties": false})";

}  // namespace

struct PluginRegistry::State {
  std::vector<boost::dll::shared_library> libraries;  // never unloaded (see load_file)
  std::deque<Entry> entries;
  std::vector<LoadedPlugin> snapshot;  // copies of entries[i].plugin, for plugins()
  std::vector<Failure> failures;
  std::vector<fs::path> searched;

  const Entry* by_path(const fs::path& canonical) const {
    for (const Entry& e : entries)
      if (e.plugin.path == canonical) return &e;
    return nullptr;
  }
  const Entry* by_kind_and_name(int32_t kind, std::string_view name) const {
    for (const Entry& e : entries)
      if (e.plugin.descriptor->kind == kind && e.name == name) return &e;
    return nullptr;
  }

  // Loads and checks one file; on refusal throws Error(reason) and sets *refused_name when the
  // descriptor was readable.
  const Entry& load_file(const fs::path& file, std::string* refused_name);
};

const Entry& PluginRegistry::State::load_file(const fs::path& file, std::string* refused_name) {
  std::error_code fs_error;
  if (!fs::exists(file, fs_error))
    throw Error("no such file. Fix: check the path, or list what exists with `tessera plugins`");
  if (!fs::is_regular_file(file, fs_error))
    throw Error("not a regular file. Fix: point at the plugin's lib<name>.so");
  const fs::path canonical = fs::canonical(file, fs_error);
  if (const Entry* existing = by_path(canonical)) return *existing;

  // Boost.DLL's error_code overload leaves dlerror() pending: it holds the loader's own reason
  // ("invalid ELF header", "libcudart.so.13: cannot open shared object file", ...).
  boost::dll::shared_library library;
  boost::dll::fs::error_code dl_error;
  (void)dlerror();
  library.load(canonical, dl_error,
               boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  if (dl_error || !library.is_loaded()) {
    const char* dl_message = dlerror();
    const std::string why = dl_message != nullptr ? dl_message : dl_error.message();
    // A missing dependency (a CUDA plugin on a machine without CUDA) needs another fix than a
    // file that is not a shared object at all.
    const bool missing_dependency = why.find("cannot open shared object") != std::string::npos;
    throw Error(fmt::format(
        "the dynamic loader refused it: {}. Fix: {}", why,
        missing_dependency
            ? fmt::format("install the library it needs or add its directory to "
                          "LD_LIBRARY_PATH (`ldd {}` lists what is missing)",
                          canonical.string())
            : "make sure it is a shared object built for this platform (x86-64 Linux ELF)"));
  }
  if (!library.has(TS_PLUGIN_ENTRY_SYMBOL))
    throw Error(fmt::format(
        "it exports no `{}` symbol, so it is not a Tessera plugin. Fix: define the entry with "
        "TESSERA_DEFINE_PLUGIN(descriptor) and build with tessera_add_plugin() so the symbol is "
        "exported",
        TS_PLUGIN_ENTRY_SYMBOL));
  // Kept loaded even when refused below: a library may have registered thread-exit handlers, and
  // unloading code that is referenced later is a crash, while keeping it costs a few pages.
  libraries.push_back(library);
  const auto entry_fn = library.get<const ts_plugin_descriptor*()>(TS_PLUGIN_ENTRY_SYMBOL);
  const ts_plugin_descriptor* descriptor = entry_fn();
  if (const std::string refusal = descriptor_refusal(descriptor); !refusal.empty()) {
    // The layout (so the name's offset) is only known for our major version; the name helps
    // find() explain why a plugin the user asked for is absent.
    if (descriptor != nullptr && descriptor->struct_size >= sizeof(ts_plugin_descriptor) &&
        descriptor->abi_major == TS_ABI_MAJOR && descriptor->name != nullptr)
      *refused_name = descriptor->name;
    throw Error(refusal);
  }
  *refused_name = descriptor->name;
  if (const Entry* twin = by_kind_and_name(descriptor->kind, descriptor->name))
    throw Error(fmt::format(
        "another {} plugin named `{}` is already loaded from {} (the first one found wins). Fix: "
        "remove one of the two, or rename one",
        kind_name(static_cast<ts_plugin_kind>(descriptor->kind)), descriptor->name,
        twin->plugin.path.string()));

  LoadedPlugin plugin;
  plugin.path = canonical;
  plugin.descriptor = descriptor;
  try {
    plugin.build_info = parse_field(descriptor->build_info_json, "build_info_json");
    plugin.capabilities = parse_field(descriptor->capabilities_json, "capabilities_json");
    const char* schema = descriptor->options_schema_json;
    plugin.options_schema = std::make_shared<const util::JsonSchema>(util::JsonSchema::parse(
        schema != nullptr && schema[0] != '\0' ? schema : kNoOptionsSchema));
  } catch (const Error& e) {
    throw Error(fmt::format("{}. Fix: correct the descriptor's JSON in the plugin", e.what()));
  }
  Entry& entry = entries.emplace_back();
  entry.plugin = std::move(plugin);
  entry.name = descriptor->name;
  entry.host = make_host_api(&entry.name);
  snapshot.push_back(entry.plugin);
  return entry;
}

// ------------------------------------------------------------------ free functions

std::string_view kind_name(ts_plugin_kind kind) {
  const int index = static_cast<int>(kind) - 1;
  if (index < 0 || index >= static_cast<int>(std::size(kKindNames))) return "unknown";
  return kKindNames[index];
}

ts_plugin_kind parse_kind(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kKindNames); ++i)
    if (kKindNames[i] == name) return static_cast<ts_plugin_kind>(i + 1);
  const std::string guess =
      util::nearest(name, std::vector<std::string>(std::begin(kKindNames), std::end(kKindNames)));
  throw Error(
      fmt::format("unknown plugin kind `{}`{}; kinds are attention, kv_cache, sampler, "
                  "frontend",
                  name, guess.empty() ? "" : fmt::format(" (did you mean `{}`?)", guess)));
}

std::string device_name(ts_device device) {
  if (device.type == TS_DEVICE_CPU) return "cpu";
  if (device.type == TS_DEVICE_CUDA) return fmt::format("cuda:{}", device.ordinal);
  return fmt::format("device type {}", device.type);
}

// ------------------------------------------------------------------ PluginRegistry

PluginRegistry::PluginRegistry() : state_(std::make_unique<State>()) {}
PluginRegistry::~PluginRegistry() = default;

std::vector<fs::path> PluginRegistry::default_search_path() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("TESSERA_PLUGIN_PATH"); env != nullptr) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      const std::string_view item = rest.substr(0, colon);
      if (!item.empty()) candidates.emplace_back(item);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  }
  boost::dll::fs::error_code ec;
  const fs::path exe_dir = boost::dll::program_location(ec).parent_path();
  if (!ec && !exe_dir.empty()) {
    candidates.push_back(exe_dir / "plugins");
    candidates.push_back(exe_dir / ".." / "lib" / "tessera" / "plugins");
  }
  candidates.emplace_back(TESSERA_PLUGIN_INSTALL_DIR);
  std::vector<fs::path> unique;
  for (const fs::path& c : candidates) {
    const fs::path normal = c.lexically_normal();
    if (std::find(unique.begin(), unique.end(), normal) == unique.end()) unique.push_back(normal);
  }
  return unique;
}

void PluginRegistry::discover(const std::vector<fs::path>& directories) {
  for (const fs::path& dir : directories) {
    state_->searched.push_back(fs::absolute(dir).lexically_normal());
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      const std::string file = it->path().filename().string();
      if (file.size() > 6 && file.starts_with("lib") && file.ends_with(".so"))
        files.push_back(fs::absolute(it->path()));
    }
    if (ec) state_->failures.push_back({dir, "cannot list the directory: " + ec.message(), ""});
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      std::string name;
      try {
        (void)state_->load_file(file, &name);
      } catch (const Error& e) {
        state_->failures.push_back({file, e.what(), name});
      }
    }
  }
}

const LoadedPlugin& PluginRegistry::load(const fs::path& file) {
  std::string name;
  try {
    return state_->load_file(file, &name).plugin;
  } catch (const Error& e) {
    throw Error(fmt::format("cannot load plugin {}: {}", file.string(), e.what()));
  }
}

const LoadedPlugin& PluginRegistry::find(ts_plugin_kind kind, std::string_view name) const {
  if (const Entry* e = state_->by_kind_and_name(kind, name)) return e->plugin;
  std::vector<std::string> same_kind;
  for (const Entry& e : state_->entries)
    if (e.plugin.kind() == kind) same_kind.push_back(e.name);
  const std::string available =
      fmt::format("Available {} plugins: {}", kind_name(kind), list_or_none(same_kind));
  for (const Entry& e : state_->entries) {
    if (e.name != name) continue;
    throw Error(fmt::format(
        "plugin `{}` ({}) is a {} plugin, not a {} plugin. Fix: name a {} plugin here. {}", name,
        e.plugin.path.string(), kind_name(e.plugin.kind()), kind_name(kind), kind_name(kind),
        available));
  }
  std::string message = fmt::format("no {} plugin named `{}`", kind_name(kind), name);
  if (const std::string guess = util::nearest(name, same_kind); !guess.empty())
    message += fmt::format(" (did you mean `{}`?)", guess);
  message += ". " + available + ".";
  // A refused file with that name (or that file name) is most likely what the user meant.
  const std::string file_name = fmt::format("lib{}.so", name);
  for (const Failure& f : state_->failures)
    if (f.name == name || f.path.filename() == file_name)
      message += fmt::format("\n  {} was refused: {}", f.path.string(), f.reason);
  std::vector<std::string> searched;
  for (const fs::path& p : state_->searched) searched.push_back(p.string());
  message += "\n  Searched: " + list_or_none(searched);
  throw Error(message);
}

std::string PluginRegistry::normalized_options(const LoadedPlugin& plugin,
                                               const std::string& options_json) const {
  json options = json::object();
  if (!options_json.empty()) {
    try {
      options = json::parse(options_json);
    } catch (const json::parse_error& e) {
      throw Error(fmt::format("options for {} plugin `{}` are not valid JSON: {}",
                              kind_name(plugin.kind()), plugin.name(), e.what()));
    }
  }
  const auto violations = plugin.options_schema->validate(options, "options");
  if (!violations.empty()) {
    std::string message =
        fmt::format("invalid options for {} plugin `{}` ({}):", kind_name(plugin.kind()),
                    plugin.name(), plugin.path.string());
    for (const util::SchemaViolation& v : violations) message += "\n  " + v.to_string();
    throw Error(message);
  }
  return plugin.options_schema->with_defaults(options).dump();
}

void PluginRegistry::validate_options(const LoadedPlugin& plugin,
                                      const std::string& options_json) const {
  (void)normalized_options(plugin, options_json);
}

PluginInstance PluginRegistry::create(const LoadedPlugin& plugin, const std::string& options_json,
                                      ts_device device) const {
  const Entry* entry = state_->by_path(plugin.path);
  TS_CHECK(entry != nullptr && entry->plugin.descriptor == plugin.descriptor,
           "plugin `{}` ({}) was not loaded by this registry", plugin.name(), plugin.path.string());
  const std::string options = normalized_options(plugin, options_json);
  const ts_plugin_descriptor* d = plugin.descriptor;
  const std::string who = fmt::format("{} plugin `{}` ({})", kind_name(plugin.kind()),
                                      plugin.name(), plugin.path.string());
  const auto status_text = [](ts_status s) {
    return fmt::format("{} [{}]", s.message != nullptr ? s.message : "(no message)",
                       status_code_name(s.code));
  };
  ts_instance* instance = nullptr;
  try {
    const ts_status support = d->check_support(options.c_str(), device);
    if (support.code != TS_OK)
      throw Error(fmt::format("{} cannot run on {} with these options: {}", who,
                              device_name(device), status_text(support)));
    const ts_status created = d->create(&entry->host, options.c_str(), device, &instance);
    if (created.code != TS_OK)
      throw Error(fmt::format("{} failed to create an instance on {}: {}", who, device_name(device),
                              status_text(created)));
  } catch (const Error&) {
    throw;
  } catch (...) {
    // Only reachable when a plugin skipped tessera::sdk::guarded; the process survives anyway.
    throw Error(
        fmt::format("{} let an exception cross the C boundary. Fix (plugin author): wrap "
                    "every entry point in tessera::sdk::guarded",
                    who));
  }
  TS_CHECK(instance != nullptr, "{} reported success from create but returned no instance", who);
  return PluginInstance(d, instance);
}

const std::vector<LoadedPlugin>& PluginRegistry::plugins() const { return state_->snapshot; }
const std::vector<PluginRegistry::Failure>& PluginRegistry::failures() const {
  return state_->failures;
}
const std::vector<fs::path>& PluginRegistry::searched_directories() const {
  return state_->searched;
}

}  // namespace tessera
