// The small routes, as pure functions of (server context, request body) -> reply:
//   GET /v1/models, GET /v1/models/{id}, POST /tokenize, POST /detokenize,
//   GET /health, GET /ready, GET /metrics.
// The generation routes stream and live in generation_call.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api_error.hpp"
#include "engine_client.hpp"
#include "http_metrics.hpp"
#include "openai_request.hpp"

namespace tessera::http {

struct Reply {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

[[nodiscard]] Reply error_reply(const ApiError& error);

// What every handler may read; fixed after start() except the engine's own state.
struct ServerContext {
  EngineClient engine;
  std::string model_name;
  std::int64_t max_context = 0;
  std::int64_t created = 0;  // unix seconds, for /v1/models
  RequestLimits limits;
  std::int64_t max_body_bytes = 8 << 20;
  const HttpMetrics* metrics = nullptr;
  // Fills model_name, max_context and limits from the engine's model_info_json.
  void load_model_info(std::int64_t max_stop, std::int64_t max_prompts);
};

[[nodiscard]] Reply handle_models(const ServerContext& ctx);
[[nodiscard]] Reply handle_model(const ServerContext& ctx, std::string_view id);
[[nodiscard]] Reply handle_tokenize(const ServerContext& ctx, std::string_view body);
[[nodiscard]] Reply handle_detokenize(const ServerContext& ctx, std::string_view body);
[[nodiscard]] Reply handle_health();
[[nodiscard]] Reply handle_ready(const ServerContext& ctx);
[[nodiscard]] Reply handle_metrics(const ServerContext& ctx);
// GET /v1/ab/report: the engine's live A/B comparison, 404 without [ab].
[[nodiscard]] Reply handle_ab_report(const ServerContext& ctx);

}  // namespace tessera::http
