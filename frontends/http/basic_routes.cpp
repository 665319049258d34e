#include "basic_routes.hpp"

#include <fmt/format.h>

#include <chrono>

#include "request_fields.hpp"

namespace tessera::http {

namespace {

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Reply json_reply(const Json& j) {
  Reply r;
  r.body = dump(j);
  return r;
}

Json model_card(const ServerContext& ctx) {
  return {{"id", ctx.model_name},
          {"object", "model"},
          {"created", ctx.created},
          {"owned_by", "tessera"},
          {"root", ctx.model_name},
          {"parent", nullptr},
          {"max_model_len", ctx.max_context},
          {"permission", Json::array()}};
}

void check_model_field(const FieldReader& r, const ServerContext& ctx) {
  const auto model = r.string("model");
  if (model && *model != ctx.model_name) {
    ApiError e;
    e.status = 404;
    e.message = fmt::format("The model `{}` does not exist.", *model);
    e.param = "model";
    e.code = "model_not_found";
    throw RequestError(std::move(e));
  }
}

}  // namespace

Reply error_reply(const ApiError& error) {
  Reply r;
  r.status = error.status;
  r.body = error.body();
  if (error.retry_after_s)
    r.headers.emplace_back("Retry-After", std::to_string(*error.retry_after_s));
  return r;
}

void ServerContext::load_model_info(std::int64_t max_stop, std::int64_t max_prompts) {
  const Json info = Json::parse(engine.model_info_json(), nullptr, /*allow_exceptions=*/false);
  created = std::chrono::duration_cast<std::chrono::seconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  if (info.is_object()) {
    model_name = string_member(info, "id");
    max_context = int_member(info, "max_context", 0);
    limits.vocab_size = int_member(info, "vocab_size", limits.vocab_size);
    limits.default_max_tokens = int_member(info, "default_max_tokens", limits.default_max_tokens);
    if (const Json* l = member(info, "limits")) {
      limits.max_tokens = int_member(*l, "max_tokens", limits.max_tokens);
      limits.max_n = int_member(*l, "max_n", limits.max_n);
      limits.max_logprobs = int_member(*l, "max_logprobs", limits.max_logprobs);
      limits.max_queue = int_member(*l, "max_queue", limits.max_queue);
      max_body_bytes = int_member(*l, "max_body_bytes", max_body_bytes);
    }
  }
  if (model_name.empty()) model_name = "model";
  limits.max_stop = max_stop;
  limits.max_prompts = max_prompts;
}

Reply handle_models(const ServerContext& ctx) {
  return json_reply({{"object", "list"}, {"data", Json::array({model_card(ctx)})}});
}

Reply handle_model(const ServerContext& ctx, std::string_view id) {
  if (id != ctx.model_name) {
    ApiError e;
    e.status = 404;
    e.message = fmt::format("The model `{}` does not exist.", id);
    e.code = "model_not_found";
    return error_reply(e);
  }
  return json_reply(model_card(ctx));
}

// vLLM's /tokenize: {"prompt": "..."} or {"messages": [...], tools, thinking...}
// -> {"count", "max_model_len", "tokens"}.
Reply handle_tokenize(const ServerContext& ctx, std::string_view body) {
  const Json request = parse_json_object(body);
  const FieldReader r(request);
  check_model_field(r, ctx);
  std::string text;
  if (r.has("messages")) {
    const Json* messages = r.get("messages");
    if (!messages->is_array() || messages->empty()) {
      reject("'messages' must be a non-empty array", "messages");
    }
    Json chat = {{"messages", *messages}};
    for (const char* key : {"tools", "thinking", "reasoning_effort"}) {
      if (r.has(key)) chat[key] = *r.get(key);
    }
    if (const Json* kwargs = r.get("chat_template_kwargs");
        kwargs != nullptr && kwargs->is_object()) {
      if (kwargs->contains("thinking")) chat["thinking"] = (*kwargs)["thinking"];
    }
    if (chat.contains("thinking") && chat["thinking"].is_object()) {
      chat["thinking"] = string_member(chat["thinking"], "type") == "enabled";
    }
    text = ctx.engine.apply_chat_template(dump(chat));
  } else {
    const auto prompt = r.string("prompt");
    if (!prompt) reject("'prompt' (a string) or 'messages' is required", "prompt");
    text = *prompt;
  }
  const auto ids = ctx.engine.tokenize(text);
  return json_reply({{"count", ids.size()}, {"max_model_len", ctx.max_context}, {"tokens", ids}});
}

// vLLM's /detokenize: {"tokens": [ids]} -> {"prompt": "text"}.
Reply handle_detokenize(const ServerContext& ctx, std::string_view body) {
  const Json request = parse_json_object(body);
  const FieldReader r(request);
  check_model_field(r, ctx);
  if (!r.has("tokens")) reject("'tokens' (an array of token ids) is required", "tokens");
  const auto ids64 = r.integers("tokens", static_cast<std::size_t>(ctx.max_body_bytes), 0,
                                ctx.limits.vocab_size - 1);
  const std::vector<std::int32_t> ids(ids64.begin(), ids64.end());
  return json_reply({{"prompt", ctx.engine.detokenize(ids)}});
}

Reply handle_health() {
  Reply r;
  r.content_type = "text/plain";
  r.body = "ok\n";
  return r;
}

Reply handle_ready(const ServerContext& ctx) {
  Reply r;
  r.content_type = "text/plain";
  switch (ctx.engine.health()) {
    case EngineHealth::kReady:
      r.body = "ready\n";
      break;
    case EngineHealth::kDraining:
      r.status = 503;
      r.body = "draining\n";
      break;
    default:
      r.status = 503;
      r.body = "loading\n";
  }
  return r;
}

Reply handle_ab_report(const ServerContext& ctx) {
  auto report = ctx.engine.ab_report_json();
  if (!report) {
    ApiError e;
    e.status = 404;
    e.message = "this server runs no live A/B test (no [ab] arms in its configuration)";
    throw RequestError(std::move(e));
  }
  Reply r;
  r.body = std::move(*report);
  return r;
}

Reply handle_metrics(const ServerContext& ctx) {
  Reply r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = ctx.engine.metrics_text();
  if (ctx.metrics != nullptr) r.body += ctx.metrics->exposition(ctx.model_name);
  return r;
}

}  // namespace tessera::http
