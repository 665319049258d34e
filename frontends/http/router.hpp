// Which handler a request goes to, and whether it may: the request target is split and matched
// EXACTLY against the route table, with no decoding or normalisation, so "//v1/models",
// "/v1%2Fmodels" or "/health/../v1/models" are simply unknown paths. The API key is required on
// every path except the exact exempt ones (by default /health, /ready, /metrics): an unknown path
// without a key is 401, not 404, so probing learns nothing.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::http {

enum class Route {
  kChatCompletions,  // POST /v1/chat/completions
  kCompletions,      // POST /v1/completions
  kModels,           // GET  /v1/models
  kModel,            // GET  /v1/models/{id}
  kTokenize,         // POST /tokenize
  kDetokenize,       // POST /detokenize
  kHealth,           // GET  /health   liveness: 200 while the process answers
  kReady,            // GET  /ready    200 only when the engine is ready (503 loading/draining)
  kMetrics,          // GET  /metrics  Prometheus text
  kAbReport,         // GET  /v1/ab/report  the running live A/B comparison (404 without [ab])
};

enum class Method { kGet, kHead, kPost, kOptions, kOther };

struct RequestTarget {
  std::string_view path;   // from the leading '/' up to '?' (exclusive)
  std::string_view query;  // after '?', possibly empty
};

// Origin-form targets only ("/path?query"); nullopt for absolute-form, "*", empty or targets with
// control characters, spaces or a fragment.
[[nodiscard]] std::optional<RequestTarget> split_target(std::string_view target) noexcept;

struct RouteMatch {
  Route route;
  std::string_view model_id;  // kModel only
};
[[nodiscard]] std::optional<RouteMatch> match_route(std::string_view path) noexcept;

// "GET", "POST": what a route answers (HEAD is accepted wherever GET is).
[[nodiscard]] Method route_method(Route route) noexcept;
[[nodiscard]] const char* method_name(Method method) noexcept;

struct GateOptions {
  std::string api_key;                    // empty: no key required
  std::vector<std::string> exempt_paths;  // exact raw paths that need no key
  std::vector<std::string> cors_origins;  // exact origins, or "*"; empty: CORS off
};

struct GateInput {
  Method method = Method::kOther;
  std::string_view target;
  std::string_view authorization;      // header value, "" when absent
  std::string_view origin;             // header value, "" when absent
  bool http11 = true;                  // HTTP/1.1 (false: HTTP/1.0)
  bool has_host = true;                // a Host header was sent
  std::string_view transfer_encoding;  // header value, "" when absent
  std::string_view content_encoding;   // header value, "" when absent
};

// The verdict on a request before its body is looked at.
struct GateDecision {
  enum class Kind { kRoute, kPreflight, kReject } kind = Kind::kReject;
  RouteMatch match{Route::kHealth, {}};
  unsigned status = 0;      // kReject: 400, 401, 404, 405, 415 or 501
  std::string message;      // kReject: for the error object
  std::string allow;        // 405 and preflight: the Allow header value
  std::string cors_origin;  // non-empty: echo in Access-Control-Allow-Origin
};

[[nodiscard]] GateDecision decide(const GateInput& in, const GateOptions& options);

}  // namespace tessera::http
