// A byte-level pass over the TOML text before toml++ sees it. toml++ 3.3.0 (Debian 12's) reaches
// TOML_UNREACHABLE (undefined behaviour) in is_non_ascii_horizontal_whitespace() when it looks
// for whitespace and meets certain non-ASCII code points (upstream issues #190 and #295, fixed by
// PR #305 after 3.3.0; fuzz_config found it again). It only looks there in two places:
//  - outside strings and comments, where TOML 1.0 allows no non-ASCII character at all, so such
//    a character is reported here as the error it is;
//  - after a line-ending backslash in a multi-line basic string, where the text is valid TOML;
//    it is refused here with the workaround (write the character as \uXXXX).
// Which bytes lie in a string or a comment is only certain for valid TOML, and toml++ also looks
// for whitespace while it reports some errors (it scans a bad value up to its end). So the loader
// parses the text's ASCII shadow first (ascii_shadow): the same text with every non-ASCII code
// point replaced by one 'x'. Positions count code points, so the shadow's errors are the text's
// errors at the same line:column; when the shadow is valid TOML, this scan classified every byte
// of the original correctly (a non-ASCII code point and 'x' move the scan alike), and toml++
// reads the remaining non-ASCII code points only as string or comment content.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "config/config.hpp"

namespace tessera::config_detail {

// The first such character, or nullopt when toml++ may parse the text.
[[nodiscard]] std::optional<ConfigDiagnostic> find_text_unsafe_for_tomlpp(std::string_view text,
                                                                          std::string_view name);

// `text` with every well-formed non-ASCII UTF-8 sequence replaced by 'x' (a leading byte order
// mark and ill-formed bytes are kept: toml++ skips the first and refuses the second before it
// classifies anything); nullopt when the text is pure ASCII and needs no shadow.
[[nodiscard]] std::optional<std::string> ascii_shadow(std::string_view text);

}  // namespace tessera::config_detail
