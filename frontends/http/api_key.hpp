// API-key check for the HTTP frontend: `Authorization: Bearer <key>` compared in constant time, so
// the response time does not reveal how many leading characters of a guess were right.
#pragma once

#include <optional>
#include <string_view>

namespace tessera::http {

// True when `given` equals `expected`. The running time depends only on expected.size(), never
// on the contents of either string or on where they first differ.
[[nodiscard]] bool constant_time_equals(std::string_view given, std::string_view expected) noexcept;

// The token of an `Authorization` header value "Bearer <token>" (scheme case-insensitive, one or
// more spaces); nullopt for any other shape (missing scheme, "Basic", empty token).
[[nodiscard]] std::optional<std::string_view> bearer_token(std::string_view header) noexcept;

// An empty expected key means the server has no key: every request passes.
[[nodiscard]] bool authorized(std::string_view authorization_header,
                              std::string_view expected_key) noexcept;

}  // namespace tessera::http
