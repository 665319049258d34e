// Header-only API-key check shared by the frontends: `Authorization: Bearer <key>` (an HTTP
// header, or gRPC metadata) compared in constant time, so the response time does not reveal how
// many leading characters of a guess were right.
#pragma once

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera::sdk {

// True when `given` equals `expected`. The running time depends only on expected.size(), never
// on the contents of either string or on where they first differ.
[[nodiscard]] inline bool constant_time_equals(std::string_view given,
                                               std::string_view expected) noexcept {
  // Walk the expected key once, whatever `given` is: a length mismatch is folded into the
  // difference instead of returning early. `volatile` keeps the compiler from turning the loop
  // into an early-exit memcmp.
  volatile std::uint8_t difference = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto g =
        given.empty() ? std::uint8_t{0} : static_cast<std::uint8_t>(given[i % given.size()]);
    difference = difference | static_cast<std::uint8_t>(g ^ static_cast<std::uint8_t>(expected[i]));
  }
  return difference == 0;
}

// The token of an `Authorization` value "Bearer <token>" (scheme case-insensitive, one or more
// spaces); nullopt for any other shape (missing scheme, "Basic", empty token).
[[nodiscard]] inline std::optional<std::string_view> bearer_token(
    std::string_view header) noexcept {
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return std::nullopt;
  }
  std::string_view rest = header.substr(kScheme.size());
  if (rest.front() != ' ') return std::nullopt;
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t')) rest.remove_suffix(1);
  if (rest.empty()) return std::nullopt;
  return rest;
}

// An empty expected key means the server has no key: every request passes.
[[nodiscard]] inline bool authorized(std::string_view authorization,
                                     std::string_view expected_key) noexcept {
  if (expected_key.empty()) return true;
  const auto token = bearer_token(authorization);
  // Still compare on a malformed value so both failure paths take the same time.
  return constant_time_equals(token.value_or(std::string_view{}), expected_key) &&
         token.has_value();
}

}  // namespace tessera::sdk
