#include "router.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>

#include "api_key.hpp"

namespace tessera::http {

namespace {

constexpr std::array<std::pair<std::string_view, Route>, 9> kExactRoutes{{
    {"/v1/chat/completions", Route::kChatCompletions},
    {"/v1/completions", Route::kCompletions},
    {"/v1/models", Route::kModels},
    {"/tokenize", Route::kTokenize},
    {"/detokenize", Route::kDetokenize},
    {"/health", Route::kHealth},
    {"/ready", Route::kReady},
    {"/metrics", Route::kMetrics},
    {"/v1/ab/report", Route::kAbReport},
}};

constexpr std::string_view kModelPrefix = "/v1/models/";

bool is_cors_allowed(std::string_view origin, const std::vector<std::string>& allowed) {
  if (origin.empty()) return false;
  return std::any_of(allowed.begin(), allowed.end(),
                     [&](const std::string& a) { return a == "*" || a == origin; });
}

// The first coding of a comma-separated header value that is neither "identity" nor `allowed`
// (case-insensitive, blanks trimmed); nullopt when every coding is acceptable.
std::optional<std::string> unsupported_coding(std::string_view value, std::string_view allowed) {
  const auto same = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) ==
                    std::tolower(static_cast<unsigned char>(y));
           });
  };
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    std::string_view coding = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
    while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) {
      coding.remove_prefix(1);
    }
    while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) {
      coding.remove_suffix(1);
    }
    if (coding.empty() || same(coding, "identity") || (!allowed.empty() && same(coding, allowed))) {
      continue;
    }
    return std::string(coding);
  }
  return std::nullopt;
}

}  // namespace

std::optional<RequestTarget> split_target(std::string_view target) noexcept {
  if (target.empty() || target.front() != '/') return std::nullopt;
  for (const char c : target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f || c == '#') return std::nullopt;
  }
  const auto q = target.find('?');
  if (q == std::string_view::npos) return RequestTarget{target, {}};
  return RequestTarget{target.substr(0, q), target.substr(q + 1)};
}

std::optional<RouteMatch> match_route(std::string_view path) noexcept {
  for (const auto& [p, route] : kExactRoutes) {
    if (p == path) return RouteMatch{route, {}};
  }
  if (path.size() > kModelPrefix.size() && path.substr(0, kModelPrefix.size()) == kModelPrefix) {
    const std::string_view id = path.substr(kModelPrefix.size());
    // Model ids may contain '/' ("org/name"), never an empty, "." or ".." segment.
    bool ok = true;
    std::size_t begin = 0;
    while (ok) {
      const std::size_t end = id.find('/', begin);
      const std::string_view segment =
          id.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
      ok = !segment.empty() && segment != "." && segment != "..";
      if (end == std::string_view::npos) break;
      begin = end + 1;
    }
    if (ok) return RouteMatch{Route::kModel, id};
  }
  return std::nullopt;
}

Method route_method(Route route) noexcept {
  switch (route) {
    case Route::kChatCompletions:
    case Route::kCompletions:
    case Route::kTokenize:
    case Route::kDetokenize:
      return Method::kPost;
    default:
      return Method::kGet;
  }
}

const char* method_name(Method method) noexcept {
  switch (method) {
    case Method::kGet:
      return "GET";
    case Method::kHead:
      return "HEAD";
    case Method::kPost:
      return "POST";
    case Method::kOptions:
      return "OPTIONS";
    default:
      return "OTHER";
  }
}

GateDecision decide(const GateInput& in, const GateOptions& options) {
  GateDecision d;
  const auto target = split_target(in.target);
  if (!target) {
    d.status = 400;
    d.message = "malformed request target (only origin-form \"/path?query\" is accepted)";
    return d;
  }
  // Framing first (RFC 9112): a body in a coding this server cannot undo is refused, not read
  // as if it were plain JSON.
  if (in.http11 && !in.has_host) {
    d.status = 400;
    d.message = "an HTTP/1.1 request needs a Host header";
    return d;
  }
  if (const auto coding = unsupported_coding(in.transfer_encoding, "chunked")) {
    d.status = 501;
    d.message = "Transfer-Encoding \"" + *coding + "\" is not implemented (only chunked)";
    return d;
  }
  if (const auto coding = unsupported_coding(in.content_encoding, "")) {
    d.status = 415;
    d.message = "Content-Encoding \"" + *coding + "\" is not supported (send the body as is)";
    return d;
  }
  const bool cors = is_cors_allowed(in.origin, options.cors_origins);
  if (cors) d.cors_origin = std::string(in.origin);
  const auto match = match_route(target->path);

  // CORS preflight: browsers send it without credentials, so it is answered before the key
  // check — but only for known routes and allowed origins.
  if (in.method == Method::kOptions && cors && match) {
    d.kind = GateDecision::Kind::kPreflight;
    d.match = *match;
    d.allow = std::string(method_name(route_method(match->route))) + ", OPTIONS";
    return d;
  }

  const bool exempt = std::any_of(options.exempt_paths.begin(), options.exempt_paths.end(),
                                  [&](const std::string& p) { return p == target->path; });
  if (!exempt && !authorized(in.authorization, options.api_key)) {
    d.status = 401;
    d.message = "invalid or missing API key (send \"Authorization: Bearer <key>\")";
    return d;
  }
  if (!match) {
    d.status = 404;
    d.message = "no route for " + std::string(target->path);
    return d;
  }
  const Method wanted = route_method(match->route);
  const bool method_ok =
      in.method == wanted || (wanted == Method::kGet && in.method == Method::kHead);
  if (!method_ok) {
    d.status = 405;
    d.message = std::string("method not allowed; use ") + method_name(wanted);
    d.allow = method_name(wanted);
    return d;
  }
  d.kind = GateDecision::Kind::kRoute;
  d.match = *match;
  return d;
}

}  // namespace tessera::http
