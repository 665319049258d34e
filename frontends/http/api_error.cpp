#include "api_error.hpp"

#include <nlohmann/json.hpp>
#include <utility>

namespace tessera::http {

std::string ApiError::type() const {
  switch (status) {
    case 401:
      return "authentication_error";
    case 429:
      return "rate_limit_error";
    case 503:
      return "service_unavailable_error";
    default:
      return status >= 500 ? "internal_error" : "invalid_request_error";
  }
}

std::string ApiError::body() const {
  nlohmann::ordered_json error = {
      {"message", message},
      {"type", type()},
      {"param", param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(param)},
      {"code", code.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(code)}};
  return nlohmann::ordered_json{{"error", std::move(error)}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError bad_request(std::string message, std::string param) {
  ApiError e;
  e.status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

}  // namespace tessera::http
