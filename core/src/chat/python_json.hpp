// JSON text exactly as Python's json.dumps(value, ensure_ascii=False) writes it, which is how the
// DeepSeek-V4 encoder puts tool schemas and non-string tool arguments into prompts (README §3.8):
// ", " and ": " separators, keys in their given order, floats as Python's repr (shortest
// round-trip digits; positional when 1e-4 <= |x| < 1e16, always with a fraction: 1.0, 100.0;
// otherwise d.ddde±XX: 1e-07, 1e+20), NaN / Infinity, strings with \" \\ \n \r \t \b \f and
// \u00XX (lowercase) escapes for other controls, everything else raw UTF-8.
#pragma once

#include <string>

#include "chat/chat_types.hpp"

namespace tessera::chat {

[[nodiscard]] std::string to_python_json(const Json& value);

// repr() of a Python float.
[[nodiscard]] std::string python_float_repr(double value);

}  // namespace tessera::chat
