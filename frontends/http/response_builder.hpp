// Engine events -> OpenAI responses. One builder per HTTP generation request; it may span several
// engine requests (a /v1/completions prompt batch), prompt i owning choices [i*n, i*n+n).
//
// Streaming: every event yields the SSE bytes to send now — "data: {chunk}\n\n" frames shaped
// exactly as OpenAI sends them (role first, then content / reasoning_content / tool_calls deltas,
// a finish chunk with an empty delta, the usage chunk with empty `choices` when asked, and
// "data: [DONE]"). Otherwise the events are accumulated into one chat.completion /
// text_completion object.
//
// Not thread-safe: the HTTP session feeds it from its strand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api_error.hpp"
#include "openai_request.hpp"
#include "request_fields.hpp"

namespace tessera::http {

class ResponseBuilder {
 public:
  ResponseBuilder(const GenerationPlan& plan, std::string id, std::int64_t created);

  // Feeds one event of engine request `prompt_index`; returns SSE bytes to write (streaming),
  // else "". An "error" event before anything was streamed becomes failure() instead.
  [[nodiscard]] std::string on_event(std::size_t prompt_index, const Json& event);

  // Every engine request has sent its "done" event.
  [[nodiscard]] bool complete() const noexcept { return done_count_ == prompts_.size(); }
  // Set when the request failed before any output: send this instead of a response.
  [[nodiscard]] const std::optional<ApiError>& failure() const noexcept { return failure_; }

  // Non-streaming: the whole response object (call once complete()).
  [[nodiscard]] std::string final_body() const;
  // Streaming: the usage chunk (when asked) and "data: [DONE]" (call once complete()).
  [[nodiscard]] std::string stream_tail() const;
  // Streaming: an in-band error frame followed by [DONE], for failures after the first byte.
  [[nodiscard]] static std::string stream_error(const ApiError& error);

  [[nodiscard]] bool started_streaming() const noexcept { return started_; }

  static std::string sse(const std::string& json_text);

 private:
  struct ToolCallOut {
    std::string id, name, arguments;
  };
  struct Choice {
    bool role_sent = false;
    std::string text;  // completions / chat content
    std::string reasoning;
    std::vector<ToolCallOut> tool_calls;
    Json logprobs_content = Json::array();  // chat: logprobs.content entries
    Json legacy_logprobs;                   // completions: {tokens, token_logprobs, ...}
    std::optional<std::string> finish_reason;
    Json stop_reason;
  };
  struct Usage {
    std::int64_t prompt = 0, completion = 0, reasoning = 0, cached = 0;
  };

  [[nodiscard]] Json chunk_envelope() const;
  // The chat stream's first chunk of a choice, {"role":"assistant","content":""}, once per choice
  // (empty when it was sent already).
  [[nodiscard]] std::string role_chunk_once(Choice& choice, std::int64_t index) const;
  [[nodiscard]] Json usage_json() const;
  std::string on_delta(Choice& choice, std::int64_t index, const Json& event);
  std::string on_finish(Choice& choice, std::int64_t index, const Json& event);
  void append_logprobs(Choice& choice, const Json& entries, Json& chunk_logprobs);
  static std::string stream_error_frame_only(const ApiError& error);

  GenerationPlan plan_;
  std::string id_;
  std::int64_t created_;
  std::vector<Choice> choices_;
  std::vector<bool> prompts_;  // done flags
  std::size_t done_count_ = 0;
  Usage usage_;
  bool started_ = false;
  std::optional<ApiError> failure_;
};

// "chatcmpl-<32 hex>", "cmpl-<32 hex>", "call_<24 hex>".
[[nodiscard]] std::string random_id(std::string_view prefix, int hex_digits);

}  // namespace tessera::http
