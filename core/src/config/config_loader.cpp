// TOML text -> Config: walks the parsed document against the schema (config_schema.cpp), reports
// every problem with its file:line:col, applies defaults, then checks rules that span keys; the
// walker is config_loader.hpp, its [ab] part config_loader_ab.cpp.
#include "config/config_loader.hpp"

#include "config/toml_preflight.hpp"

namespace tessera {

using config_detail::ConfigLoader;
using config_detail::DiagnosticCollector;

Config load_config_string(std::string_view text, std::string_view virtual_name) {
  if (auto problem = config_detail::find_text_unsafe_for_tomlpp(text, virtual_name)) {
    throw ConfigError({std::move(*problem)});
  }
  toml::table root;
  try {
    // Both arguments as string_view: two literals are ambiguous in toml++ 3.3 (TOOLCHAIN #5).
    // The ASCII shadow first: its errors are the text's, found without the toml++ 3.3 UB
    // (toml_preflight.hpp).
    if (const auto shadow = config_detail::ascii_shadow(text)) {
      (void)toml::parse(std::string_view(*shadow), std::string_view(virtual_name));
    }
    root = toml::parse(std::string_view(text), std::string_view(virtual_name));
  } catch (const toml::parse_error& e) {
    DiagnosticCollector diagnostics{std::string(virtual_name)};
    diagnostics.add(e.source(), std::string(e.description()));
    diagnostics.throw_if_any();
  }
  return ConfigLoader(virtual_name).load(root);
}

}  // namespace tessera
