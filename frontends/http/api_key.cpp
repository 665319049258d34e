#include "api_key.hpp"

#include <cctype>
#include <cstddef>
#include <cstdint>

namespace tessera::http {

bool constant_time_equals(std::string_view given, std::string_view expected) noexcept {
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

std::optional<std::string_view> bearer_token(std::string_view header) noexcept {
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

bool authorized(std::string_view authorization_header, std::string_view expected_key) noexcept {
  if (expected_key.empty()) return true;
  const auto token = bearer_token(authorization_header);
  // Still compare on a malformed header so both failure paths take the same time.
  return constant_time_equals(token.value_or(std::string_view{}), expected_key) &&
         token.has_value();
}

}  // namespace tessera::http
