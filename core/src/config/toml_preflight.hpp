// A byte-level pass over the TOML text before toml++ sees it. toml++ 3.3.0 (Debian 12's) reaches
// TOML_UNREACHABLE (undefined behaviour) in is_non_ascii_horizontal_whitespace() when it looks
// for whitespace and meets certain non-ASCII code points (upstream issues #190 and #295, fixed by
// PR #305 after 3.3.0; fuzz_config found it again). It only looks there in two places:
//  - outside strings and comments, where TOML 1.0 allows no non-ASCII character at all, so such
//    a character is reported here as the error it is;
//  - after a line-ending backslash in a multi-line basic string, where the text is valid TOML;
//    it is refused here with the workaround (write the character as \uXXXX).
#pragma once

#include <optional>
#include <string_view>

#include "config/config.hpp"

namespace tessera::config_detail {

// The first such character, or nullopt when toml++ may parse the text.
[[nodiscard]] std::optional<ConfigDiagnostic> find_text_unsafe_for_tomlpp(std::string_view text,
                                                                          std::string_view name);

}  // namespace tessera::config_detail
