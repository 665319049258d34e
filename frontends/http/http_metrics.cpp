#include "http_metrics.hpp"

#include <fmt/format.h>

namespace tessera::http {

const char* route_label(const Route* route) noexcept {
  if (route == nullptr) return "other";
  switch (*route) {
    case Route::kChatCompletions:
      return "/v1/chat/completions";
    case Route::kCompletions:
      return "/v1/completions";
    case Route::kModels:
      return "/v1/models";
    case Route::kModel:
      return "/v1/models/{id}";
    case Route::kTokenize:
      return "/tokenize";
    case Route::kDetokenize:
      return "/detokenize";
    case Route::kHealth:
      return "/health";
    case Route::kReady:
      return "/ready";
    case Route::kMetrics:
      return "/metrics";
    case Route::kAbReport:
      return "/v1/ab/report";
  }
  return "other";
}

void HttpMetrics::count_request(const Route* route, unsigned status) noexcept {
  const std::size_t r = route == nullptr ? kRoutes - 1 : static_cast<std::size_t>(*route);
  std::size_t s = kStatuses.size() - 1;
  for (std::size_t i = 0; i + 1 < kStatuses.size(); ++i) {
    if (kStatuses[i] == status) s = i;
  }
  requests_[r][s].fetch_add(1, std::memory_order_relaxed);
}

std::string HttpMetrics::exposition(const std::string& model_name) const {
  // Label values are escaped per the text format: backslash, quote and newline.
  std::string model;
  for (const char c : model_name) {
    if (c == '\\' || c == '"') model += '\\';
    model += c == '\n' ? 'n' : c;
  }
  std::string out;
  out += "# HELP tessera:http_requests_total HTTP requests answered, by route and status.\n";
  out += "# TYPE tessera:http_requests_total counter\n";
  for (std::size_t r = 0; r < kRoutes; ++r) {
    const Route route = static_cast<Route>(r);
    const char* label = r + 1 == kRoutes ? "other" : route_label(&route);
    for (std::size_t s = 0; s < kStatuses.size(); ++s) {
      const auto n = requests_[r][s].load(std::memory_order_relaxed);
      if (n == 0) continue;
      out += fmt::format(
          "tessera:http_requests_total{{model_name=\"{}\",route=\"{}\",status=\"{}\"}} {}\n", model,
          label, kStatuses[s] == 0 ? std::string("other") : std::to_string(kStatuses[s]), n);
    }
  }
  out += "# HELP tessera:http_open_connections Open HTTP connections.\n";
  out += "# TYPE tessera:http_open_connections gauge\n";
  out += fmt::format("tessera:http_open_connections{{model_name=\"{}\"}} {}\n", model,
                     open_connections());
  out += "# HELP tessera:http_active_streams Server-sent-event responses in progress.\n";
  out += "# TYPE tessera:http_active_streams gauge\n";
  out +=
      fmt::format("tessera:http_active_streams{{model_name=\"{}\"}} {}\n", model, active_streams());
  out +=
      "# HELP tessera:http_client_disconnects_total Requests aborted because the client went "
      "away.\n";
  out += "# TYPE tessera:http_client_disconnects_total counter\n";
  out += fmt::format("tessera:http_client_disconnects_total{{model_name=\"{}\"}} {}\n", model,
                     disconnects_.load(std::memory_order_relaxed));
  return out;
}

}  // namespace tessera::http
