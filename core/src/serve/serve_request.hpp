// A frontend's request JSON (docs/http.md, "The engine table as frontends see it") -> what the
// engine runs: the prompt ids (text tokenized here; chat messages rendered with the model's chat
// template first), n independent choices, and one engine::Request per choice.
//
// Checked here (each failure is an InvalidRequest naming the field): types and ranges of every
// sampling field, [limits] (n, max_tokens, top_logprobs), token ids inside the vocabulary, and the
// context length, with vLLM's wording, before anything is queued or allocated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_encoder.hpp"
#include "engine/request.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::serve {

struct ServeLimits {
  int64_t max_context = 0;  // prompt + output tokens
  int64_t max_tokens = 8192;
  int64_t max_n = 8;
  int64_t max_logprobs = 20;
  int64_t default_max_tokens = 4096;  // [sampler.defaults].max_tokens
  chat::ReasoningEffortProfile effort_profile = chat::ReasoningEffortProfile::kPreview;
  bool token_ids_only = false;  // the model has no tokenizer.json: text prompts are refused
};

// Why a request is refused before submission: kInvalid -> TS_ERR_INVALID_ARGUMENT,
// kTooLong -> TS_ERR_CONTEXT_LENGTH.
class InvalidRequest : public Error {
 public:
  enum class Kind { kInvalid, kTooLong };
  InvalidRequest(Kind kind, const std::string& message) : Error(message), kind_(kind) {}
  [[nodiscard]] Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

struct ServeRequest {
  bool chat = false;  // the output is split into reasoning / content / tool calls
  chat::ThinkingMode thinking = chat::ThinkingMode::kChat;
  int64_t n = 1;
  bool include_stop_str_in_output = false;
  engine::Request base;  // prompt, sampling, stops...; choice i uses seed + i when a seed is set
};

[[nodiscard]] ServeRequest parse_serve_request(std::string_view request_json,
                                               const tokenizer::Tokenizer& tokenizer,
                                               const ServeLimits& limits);
// The same for a request already parsed (a JSON value that is not an object is refused).
[[nodiscard]] ServeRequest serve_request_from_json(const chat::Json& request,
                                                   const tokenizer::Tokenizer& tokenizer,
                                                   const ServeLimits& limits);

// vLLM's refusal text for a prompt that does not fit (max_tokens: nullopt when the client did
// not ask for a number).
[[nodiscard]] std::string context_length_message(int64_t max_context, int64_t prompt_tokens,
                                                 std::optional<int64_t> max_tokens);

}  // namespace tessera::serve
