// The OpenAI error object and the HTTP status that goes with it:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "n", "code": null}}
// Status -> type: 400/404/405/413/431 invalid_request_error, 401 authentication_error,
// 429 rate_limit_error, 503 service_unavailable_error, 500 internal_error. docs/http.md lists
// which condition gives which status.
#pragma once

#include <optional>
#include <string>

namespace tessera::http {

struct ApiError {
  unsigned status = 400;
  std::string message;
  std::string param;  // "" -> null
  std::string code;   // "" -> null; e.g. "context_length_exceeded", "model_not_found"
  std::optional<int> retry_after_s;  // 429 / 503: the Retry-After header

  [[nodiscard]] std::string type() const;
  // {"error": {...}} as compact JSON (valid UTF-8 even when the message is not).
  [[nodiscard]] std::string body() const;
};

[[nodiscard]] ApiError bad_request(std::string message, std::string param = {});

}  // namespace tessera::http
