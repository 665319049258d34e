// Typed, bounded reads of an OpenAI request body. Every read names its field, so a wrong type or
// an out-of-range value becomes a 400 whose error object carries `param`. JSON null counts as
// absent (clients send null for "not given").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "api_error.hpp"

namespace tessera::http {

// Ordered: messages and tool schemas are rendered into the prompt with their keys in request
// order (DeepSeek's encoder follows Python dict order).
using Json = nlohmann::ordered_json;

// An ApiError on its way out of a validator; caught by the route handler.
class RequestError : public std::runtime_error {
 public:
  explicit RequestError(ApiError error)
      : std::runtime_error(error.message), error_(std::move(error)) {}
  [[nodiscard]] const ApiError& error() const noexcept { return error_; }

 private:
  ApiError error_;
};

[[noreturn]] void reject(std::string message, std::string param = {});

// Parses a body that must be a JSON object; malformed JSON (including invalid UTF-8, NaN,
// trailing garbage) or another top-level type is a 400. Nesting deeper than `max_depth` is
// refused before it can exhaust the stack.
[[nodiscard]] Json parse_json_object(std::string_view body, int max_depth = 64);

class FieldReader {
 public:
  explicit FieldReader(const Json& object) : object_(object) {}

  [[nodiscard]] bool has(std::string_view key) const;         // present and not null
  [[nodiscard]] const Json* get(std::string_view key) const;  // null/absent -> nullptr

  [[nodiscard]] std::optional<bool> boolean(std::string_view key) const;
  [[nodiscard]] std::optional<std::string> string(std::string_view key) const;
  // Finite numbers in [lo, hi] (lo excluded when lo_open); integers are accepted as numbers.
  [[nodiscard]] std::optional<double> number(std::string_view key, double lo, double hi,
                                             bool lo_open = false) const;
  // Integers in [lo, hi]; 2.0 is accepted as 2, 2.5 is refused.
  [[nodiscard]] std::optional<std::int64_t> integer(std::string_view key, std::int64_t lo,
                                                    std::int64_t hi) const;
  // A string or an array of strings (OpenAI's `stop`), at most max_count of at most max_bytes.
  [[nodiscard]] std::vector<std::string> string_or_strings(std::string_view key,
                                                           std::size_t max_count,
                                                           std::size_t max_bytes) const;
  [[nodiscard]] std::vector<std::int64_t> integers(std::string_view key, std::size_t max_count,
                                                   std::int64_t lo, std::int64_t hi) const;

 private:
  const Json& object_;
};

// Safe reads of untrusted JSON (request bodies, engine events): absent members, members of
// another type and non-object containers give nullptr / the fallback, never an exception.
[[nodiscard]] const Json* member(const Json& object, std::string_view key);
[[nodiscard]] std::int64_t int_member(const Json& object, std::string_view key,
                                      std::int64_t fallback);
[[nodiscard]] double number_member(const Json& object, std::string_view key, double fallback);
[[nodiscard]] std::string string_member(const Json& object, std::string_view key);

// "integer", "string", ...: for messages.
[[nodiscard]] std::string json_kind(const Json& value);

}  // namespace tessera::http
