#include "plugins/descriptor_check.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <cstring>
#include <string_view>

namespace tessera {

namespace {

constexpr std::string_view kRebuild =
    "Fix: rebuild the plugin against this Tessera SDK (plugin_abi.h, ABI {}.{})";

std::string rebuild_fix() { return fmt::format(kRebuild, TS_ABI_MAJOR, TS_ABI_MINOR); }

// Names appear in TOML (`plugin = "fp8"`) and on the command line: keep them to a safe alphabet.
bool is_valid_name(const char* name) {
  if (name == nullptr || name[0] == '\0' || std::strlen(name) > 64) return false;
  for (const char* c = name; *c != '\0'; ++c) {
    const bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                    (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' || *c == '.';
    if (!ok) return false;
  }
  return true;
}

// The slots of each table the host calls; a null one would crash the first call.
std::string missing_slot(int32_t kind, const void* table) {
  switch (kind) {
    case TS_KIND_SAMPLER: {
      const auto* t = static_cast<const ts_sampler_table*>(table);
      return t->sample == nullptr ? "sample" : "";
    }
    case TS_KIND_KV_CACHE: {
      const auto* t = static_cast<const ts_kv_cache_table*>(table);
      if (t->describe == nullptr) return "describe";
      if (t->store == nullptr) return "store";
      return t->load == nullptr ? "load" : "";
    }
    case TS_KIND_ATTENTION: {
      const auto* t = static_cast<const ts_attention_table*>(table);
      if (t->plan == nullptr) return "plan";
      return t->run == nullptr ? "run" : "";
    }
    case TS_KIND_FRONTEND: {
      const auto* t = static_cast<const ts_frontend_table*>(table);
      if (t->start == nullptr) return "start";
      return t->stop == nullptr ? "stop" : "";
    }
    default:
      return "";
  }
}

}  // namespace

std::size_t host_table_size(int32_t kind) noexcept {
  switch (kind) {
    case TS_KIND_ATTENTION:
      return sizeof(ts_attention_table);
    case TS_KIND_KV_CACHE:
      return sizeof(ts_kv_cache_table);
    case TS_KIND_SAMPLER:  // ABI 1.0's table: sample_scanned (1.1) is optional
      return offsetof(ts_sampler_table, sample_scanned);
    case TS_KIND_FRONTEND:
      return sizeof(ts_frontend_table);
    default:
      return 0;
  }
}

std::string descriptor_refusal(const ts_plugin_descriptor* d) {
  if (d == nullptr)
    return "the entry point returned a null descriptor. Fix: return the address of a static "
           "ts_plugin_descriptor (TESSERA_DEFINE_PLUGIN)";
  // struct_size, abi_major and abi_minor are the first 8 bytes of every ABI version.
  if (d->struct_size < 8)
    return fmt::format("the descriptor says it is {} bytes, too small to hold a version. {}",
                       d->struct_size, rebuild_fix());
  if (d->abi_major != TS_ABI_MAJOR)
    return fmt::format(
        "plugin ABI {}.{} does not match host ABI {}.{} (major versions differ). Fix: rebuild the "
        "plugin against Tessera SDK {}.x (plugin_abi.h with TS_ABI_MAJOR {})",
        d->abi_major, d->abi_minor, TS_ABI_MAJOR, TS_ABI_MINOR, TS_ABI_MAJOR, TS_ABI_MAJOR);
  if (d->abi_minor > TS_ABI_MINOR)
    return fmt::format(
        "plugin ABI {}.{} is newer than host ABI {}.{} (the plugin may call what this host lacks). "
        "Fix: upgrade Tessera to a release with ABI {}.{} or later, or rebuild the plugin against "
        "this SDK (ABI {}.{})",
        d->abi_major, d->abi_minor, TS_ABI_MAJOR, TS_ABI_MINOR, d->abi_major, d->abi_minor,
        TS_ABI_MAJOR, TS_ABI_MINOR);
  if (d->struct_size < sizeof(ts_plugin_descriptor))
    return fmt::format("the descriptor is {} bytes but ABI {}.{} needs {}. {}", d->struct_size,
                       d->abi_major, d->abi_minor, sizeof(ts_plugin_descriptor), rebuild_fix());
  if (host_table_size(d->kind) == 0)
    return fmt::format(
        "unknown plugin kind {} (this host knows 1 attention, 2 kv_cache, 3 sampler, 4 frontend). "
        "Fix: set kind to one of the ts_plugin_kind values",
        d->kind);
  if (!is_valid_name(d->name))
    return fmt::format(
        "the plugin name {} is not usable. Fix: give the descriptor a name of 1 to 64 characters "
        "from [A-Za-z0-9_.-]",
        d->name == nullptr ? std::string("(null)") : fmt::format("\"{}\"", d->name));
  if (d->version == nullptr || d->version[0] == '\0')
    return "the descriptor has no version string. Fix: set version, e.g. \"1.0.0\"";
  if (d->check_support == nullptr || d->create == nullptr || d->destroy == nullptr)
    return fmt::format("entry point {} is null. Fix: set check_support, create and destroy",
                       d->check_support == nullptr ? "check_support"
                       : d->create == nullptr      ? "create"
                                                   : "destroy");
  if (d->functions == nullptr)
    return "the descriptor has no function table (functions is null). Fix: point functions at a "
           "static table of the plugin's kind";
  const auto table_size = *static_cast<const uint32_t*>(d->functions);
  if (table_size < host_table_size(d->kind))
    return fmt::format(
        "its function table is {} bytes but this host needs at least {} bytes for the kind, so a "
        "slot the host calls would be missing. {}",
        table_size, host_table_size(d->kind), rebuild_fix());
  if (const std::string slot = missing_slot(d->kind, d->functions); !slot.empty())
    return fmt::format("function table slot `{}` is null. Fix: implement {}", slot, slot);
  return "";
}

}  // namespace tessera
