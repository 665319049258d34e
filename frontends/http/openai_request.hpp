// OpenAI / vLLM request bodies -> the engine's request JSON (docs/http.md, "Engine requests").
// Everything the HTTP layer can check without the tokenizer is checked here, so a bad request is
// refused before the engine sees it: types, ranges, [limits] caps (n, top_logprobs, max_tokens,
// stop count), the model name, unsupported options. What needs the tokenizer or the chat encoder
// (context length, message structure, reasoning effort names) is checked by the engine API and
// comes back from submit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "request_fields.hpp"
#include "tessera/sampling_fields.hpp"

namespace tessera::http {

// What the server allows; [limits] of the configuration plus this frontend's own options.
struct RequestLimits {
  std::int64_t max_tokens = 8192;
  std::int64_t max_n = 8;
  std::int64_t max_logprobs = 20;
  std::int64_t max_stop = 16;                        // stop strings per request
  std::int64_t max_stop_bytes = sdk::kMaxStopBytes;  // bytes per stop string
  std::int64_t max_prompts = 64;                     // /v1/completions prompt batch
  std::int64_t max_queue = 1024;              // sequences (n x prompts) one request may queue
  std::int64_t default_max_tokens = 4096;     // what an absent max_tokens means
  std::int64_t max_response_bytes = 8 << 20;  // estimated non-streaming body (max_buffered_bytes)
  std::int64_t vocab_size = 1 << 30;          // token ids must be below it
};

enum class ApiKind { kChat, kCompletion };

// One request to the engine and how its answer is shaped for the client.
struct GenerationPlan {
  ApiKind kind = ApiKind::kChat;
  std::string model;  // echoed in every response object
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::int64_t n = 1;          // choices per prompt
  bool logprobs = false;
  std::int64_t top_logprobs = 0;
  bool echo = false;  // completions: prepend the prompt text
  bool tools_given = false;
  // One engine request per prompt (chat: always one); prompt i owns choice indices [i*n, i*n+n).
  std::vector<std::string> engine_requests;
  std::vector<std::string> echo_texts;  // completions with echo: the prompt texts (or "")
};

// `served_model` is the only model name accepted (absent "model" means it).
[[nodiscard]] GenerationPlan parse_chat_request(std::string_view body, const RequestLimits& limits,
                                                std::string_view served_model);
[[nodiscard]] GenerationPlan parse_completion_request(std::string_view body,
                                                      const RequestLimits& limits,
                                                      std::string_view served_model);

}  // namespace tessera::http
