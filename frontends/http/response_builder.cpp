#include "response_builder.hpp"

#include <fmt/format.h>

#include <random>
#include <utility>

namespace tessera::http {

namespace {

std::string dump(const Json& j) {
  // Engine text is valid UTF-8; `replace` keeps a stray byte from ever breaking a client's parser.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string text_of(const Json& event, const char* key) { return string_member(event, key); }

}  // namespace

std::string random_id(std::string_view prefix, int hex_digits) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id(prefix);
  for (int i = 0; i < hex_digits; ++i) id += "0123456789abcdef"[rng() & 15];
  return id;
}

std::string ResponseBuilder::sse(const std::string& json_text) {
  return "data: " + json_text + "\n\n";
}

ResponseBuilder::ResponseBuilder(const GenerationPlan& plan, std::string id, std::int64_t created)
    : plan_(plan), id_(std::move(id)), created_(created) {
  prompts_.assign(plan_.engine_requests.size(), false);
  choices_.resize(plan_.engine_requests.size() * static_cast<std::size_t>(plan_.n));
}

std::string ResponseBuilder::role_chunk_once(Choice& choice, std::int64_t index) const {
  if (choice.role_sent) return {};
  choice.role_sent = true;
  Json first = chunk_envelope();
  first["choices"].push_back({{"index", index},
                              {"delta", {{"role", "assistant"}, {"content", ""}}},
                              {"logprobs", nullptr},
                              {"finish_reason", nullptr}});
  return sse(dump(first));
}

Json ResponseBuilder::chunk_envelope() const {
  Json chunk = {
      {"id", id_},
      {"object", plan_.kind == ApiKind::kChat ? "chat.completion.chunk" : "text_completion"},
      {"created", created_},
      {"model", plan_.model},
      {"choices", Json::array()}};
  if (plan_.include_usage) chunk["usage"] = nullptr;
  return chunk;
}

Json ResponseBuilder::usage_json() const {
  Json usage = {{"prompt_tokens", usage_.prompt},
                {"completion_tokens", usage_.completion},
                {"total_tokens", usage_.prompt + usage_.completion}};
  if (plan_.kind == ApiKind::kChat) {
    usage["completion_tokens_details"] = {{"reasoning_tokens", usage_.reasoning}};
  }
  usage["prompt_tokens_details"] = {{"cached_tokens", usage_.cached}};
  return usage;
}

std::string ResponseBuilder::on_event(std::size_t prompt_index, const Json& event) {
  if (prompt_index >= prompts_.size() || !event.is_object()) return {};
  const std::string type = text_of(event, "type");
  if (type == "done") {
    if (!prompts_[prompt_index]) {
      prompts_[prompt_index] = true;
      ++done_count_;
      if (const auto u = event.find("usage"); u != event.end() && u->is_object()) {
        usage_.prompt += int_member(*u, "prompt_tokens", 0);
        usage_.completion += int_member(*u, "completion_tokens", 0);
        usage_.reasoning += int_member(*u, "reasoning_tokens", 0);
        usage_.cached += int_member(*u, "cached_tokens", 0);
      }
    }
    return {};
  }
  if (type == "error") {
    ApiError e;
    const std::int64_t status = int_member(event, "status", 500);
    e.status = status >= 400 && status <= 599 ? static_cast<unsigned>(status) : 500;
    e.message = text_of(event, "message");
    e.code = text_of(event, "code");
    if (!plan_.stream || !started_) {
      if (!failure_) failure_ = std::move(e);
      return {};
    }
    started_ = true;
    return stream_error_frame_only(e);
  }
  const std::int64_t local = int_member(event, "index", 0);
  if (local < 0 || local >= plan_.n) return {};
  const std::int64_t index = static_cast<std::int64_t>(prompt_index) * plan_.n + local;
  Choice& choice = choices_[static_cast<std::size_t>(index)];
  if (type == "delta") return on_delta(choice, index, event);
  if (type == "finish") return on_finish(choice, index, event);
  return {};
}

std::string ResponseBuilder::stream_error_frame_only(const ApiError& error) {
  return sse(error.body());
}

void ResponseBuilder::append_logprobs(Choice& choice, const Json& entries, Json& chunk_logprobs) {
  if (!plan_.logprobs || !entries.is_array()) return;
  if (plan_.kind == ApiKind::kChat) {
    chunk_logprobs = {{"content", Json::array()}};
    for (const auto& e : entries) {
      chunk_logprobs["content"].push_back(e);
      choice.logprobs_content.push_back(e);
    }
    return;
  }
  // Legacy completions shape: parallel arrays, top_logprobs as {token: logprob} maps.
  chunk_logprobs = {{"tokens", Json::array()},
                    {"token_logprobs", Json::array()},
                    {"top_logprobs", Json::array()},
                    {"text_offset", Json::array()}};
  if (choice.legacy_logprobs.is_null()) choice.legacy_logprobs = chunk_logprobs;
  std::size_t offset = choice.text.size();
  for (const auto& e : entries) {
    const std::string token = text_of(e, "token");
    Json top = Json::object();
    if (const auto t = e.find("top_logprobs"); t != e.end() && t->is_array()) {
      for (const auto& alt : *t) top[text_of(alt, "token")] = number_member(alt, "logprob", 0.0);
    }
    for (Json* target : {&chunk_logprobs, &choice.legacy_logprobs}) {
      (*target)["tokens"].push_back(token);
      (*target)["token_logprobs"].push_back(number_member(e, "logprob", 0.0));
      (*target)["top_logprobs"].push_back(top);
      (*target)["text_offset"].push_back(offset);
    }
    offset += token.size();
  }
}

std::string ResponseBuilder::on_delta(Choice& choice, std::int64_t index, const Json& event) {
  std::string out;
  Json chunk_logprobs;
  if (const auto lp = event.find("logprobs"); lp != event.end()) {
    append_logprobs(choice, *lp, chunk_logprobs);
  }
  if (plan_.kind == ApiKind::kCompletion) {
    std::string text = text_of(event, "text");
    if (plan_.echo && !choice.role_sent) {
      text = plan_.echo_texts[static_cast<std::size_t>(index / plan_.n)] + text;
    }
    choice.role_sent = true;
    choice.text += text;
    if (!plan_.stream || (text.empty() && chunk_logprobs.is_null())) return {};
    Json chunk = chunk_envelope();
    chunk["choices"].push_back({{"index", index},
                                {"text", text},
                                {"logprobs", chunk_logprobs},
                                {"finish_reason", nullptr}});
    started_ = true;
    return sse(dump(chunk));
  }

  const std::string reasoning = text_of(event, "reasoning");
  const std::string content = text_of(event, "content");
  choice.reasoning += reasoning;
  choice.text += content;
  Json delta = Json::object();
  if (!reasoning.empty()) {
    delta["reasoning_content"] = reasoning;
    delta["reasoning"] = reasoning;  // vLLM's newer name, for clients that read it
  }
  if (!content.empty()) delta["content"] = content;
  if (const auto calls = event.find("tool_calls"); calls != event.end() && calls->is_array()) {
    Json list = Json::array();
    for (const auto& call : *calls) {
      ToolCallOut tc{random_id("call_", 24), text_of(call, "name"), text_of(call, "arguments")};
      list.push_back({{"index", choice.tool_calls.size()},
                      {"id", tc.id},
                      {"type", "function"},
                      {"function", {{"name", tc.name}, {"arguments", tc.arguments}}}});
      choice.tool_calls.push_back(std::move(tc));
    }
    if (!list.empty()) delta["tool_calls"] = std::move(list);
  }
  if (!plan_.stream) return {};
  out += role_chunk_once(choice, index);
  if (!delta.empty() || !chunk_logprobs.is_null()) {
    Json chunk = chunk_envelope();
    chunk["choices"].push_back({{"index", index},
                                {"delta", std::move(delta)},
                                {"logprobs", chunk_logprobs},
                                {"finish_reason", nullptr}});
    out += sse(dump(chunk));
  }
  if (!out.empty()) started_ = true;
  return out;
}

std::string ResponseBuilder::on_finish(Choice& choice, std::int64_t index, const Json& event) {
  std::string reason = text_of(event, "finish_reason");
  if (reason.empty()) reason = "stop";
  if (reason == "stop" && !choice.tool_calls.empty()) reason = "tool_calls";
  choice.finish_reason = reason;
  const Json* stop_reason = member(event, "stop_reason");
  choice.stop_reason = stop_reason != nullptr ? *stop_reason : Json();
  if (!plan_.stream) return {};
  std::string out;
  Json chunk = chunk_envelope();
  if (plan_.kind == ApiKind::kChat) {
    out += role_chunk_once(choice, index);
    chunk["choices"].push_back({{"index", index},
                                {"delta", Json::object()},
                                {"logprobs", nullptr},
                                {"finish_reason", reason},
                                {"stop_reason", choice.stop_reason}});
  } else {
    std::string text;
    if (plan_.echo && !choice.role_sent) {
      text = plan_.echo_texts[static_cast<std::size_t>(index / plan_.n)];
      choice.text += text;
    }
    choice.role_sent = true;
    chunk["choices"].push_back({{"index", index},
                                {"text", text},
                                {"logprobs", nullptr},
                                {"finish_reason", reason},
                                {"stop_reason", choice.stop_reason}});
  }
  out += sse(dump(chunk));
  started_ = true;
  return out;
}

std::string ResponseBuilder::final_body() const {
  Json body = {{"id", id_},
               {"object", plan_.kind == ApiKind::kChat ? "chat.completion" : "text_completion"},
               {"created", created_},
               {"model", plan_.model},
               {"choices", Json::array()}};
  for (std::size_t i = 0; i < choices_.size(); ++i) {
    const Choice& c = choices_[i];
    Json choice = {{"index", i}};
    if (plan_.kind == ApiKind::kChat) {
      Json message = {{"role", "assistant"},
                      {"content", c.text.empty() && !c.tool_calls.empty() ? Json() : Json(c.text)},
                      {"refusal", nullptr}};
      if (!c.reasoning.empty()) {
        message["reasoning_content"] = c.reasoning;
        message["reasoning"] = c.reasoning;
      } else {
        message["reasoning_content"] = nullptr;
      }
      if (!c.tool_calls.empty()) {
        Json calls = Json::array();
        for (const auto& tc : c.tool_calls) {
          calls.push_back({{"id", tc.id},
                           {"type", "function"},
                           {"function", {{"name", tc.name}, {"arguments", tc.arguments}}}});
        }
        message["tool_calls"] = std::move(calls);
      }
      choice["message"] = std::move(message);
      choice["logprobs"] = plan_.logprobs ? Json{{"content", c.logprobs_content}} : Json();
    } else {
      std::string text = c.text;
      if (plan_.echo && !c.role_sent) text = plan_.echo_texts[i / plan_.n] + text;
      choice["text"] = text;
      choice["logprobs"] = plan_.logprobs ? c.legacy_logprobs : Json();
    }
    choice["finish_reason"] = c.finish_reason ? Json(*c.finish_reason) : Json("abort");
    choice["stop_reason"] = c.stop_reason;
    body["choices"].push_back(std::move(choice));
  }
  body["usage"] = usage_json();
  return dump(body);
}

std::string ResponseBuilder::stream_tail() const {
  std::string out;
  if (plan_.include_usage) {
    Json chunk = chunk_envelope();
    chunk["usage"] = usage_json();
    out += sse(dump(chunk));
  }
  out += "data: [DONE]\n\n";
  return out;
}

std::string ResponseBuilder::stream_error(const ApiError& error) {
  return sse(error.body()) + "data: [DONE]\n\n";
}

}  // namespace tessera::http
