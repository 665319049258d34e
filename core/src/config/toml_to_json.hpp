// Plugin option tables travel to plugins as JSON text (the ABI takes options_json). TOML maps onto
// JSON except for dates/times and non-finite floats, which JSON cannot hold: those are reported.
#pragma once

#include <toml++/toml.h>

#include <nlohmann/json.hpp>
#include <string_view>

#include "config/config_diagnostics.hpp"

namespace tessera::config_detail {

// `path` names the node in messages ("kv_cache.options.block"). Unconvertible values become null
// and are reported to `diagnostics`.
[[nodiscard]] nlohmann::json toml_to_json(const toml::node& node, std::string_view path,
                                          DiagnosticCollector& diagnostics);

}  // namespace tessera::config_detail
