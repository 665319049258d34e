// What a client gives the engine (Request) and what it gets back (a stream of Events). The engine
// works on token ids; text prompts are tokenized by the caller (engine_api.cpp does it for
// frontends). Field semantics and defaults: docs/engine.md "Requests and events".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/check.hpp"

namespace tessera::engine {

// Unset fields take [sampler.defaults] from the configuration.
struct SamplingOptions {
  std::optional<double> temperature;  // 0: greedy
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<double> frequency_penalty;
  std::optional<double> presence_penalty;
  std::optional<uint64_t> seed;  // unset and default -1: a fresh random seed
};

struct Request {
  std::vector<int32_t> prompt;  // token ids, at least one
  SamplingOptions sampling;
  std::optional<int64_t> max_tokens;  // output tokens; default [sampler.defaults].max_tokens
  std::vector<std::string> stop;      // stop strings (need a tokenizer); never in the output text
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool logprobs = false;     // logprob of each chosen token
  int32_t top_logprobs = 0;  // that many most likely tokens too (<= [limits].max_logprobs)
  bool skip_special_tokens = true;
  std::string cache_salt;  // prefix-cache isolation domain: only equal salts share pages
  int32_t priority = 0;    // lower runs first and is preempted last (vLLM convention)
  // Degeneration guard for this request ("off" | "warn" | "stop"); unset: [generation] default.
  std::optional<std::string> repetition_guard;
  // Thinking budget: once this many tokens of reasoning (after a prompt ending in <think>) are
  // generated, the engine emits </think> itself so the answer gets room; unset: [generation].
  std::optional<int64_t> max_reasoning_tokens;
  // Admission (limits.max_queue): how many sequences this submit brings, itself and the sibling
  // choices of the same client request submitted right after it. The first of a group is
  // admitted for all of them and carries the group's size; the siblings carry 0 and are not
  // checked again, so a request is admitted or refused whole.
  int64_t queue_fan_out = 1;
};

// kRepetition: the repetition guard saw a loop (a documented extension of OpenAI's reasons).
enum class FinishReason { kStop, kLength, kAbort, kError, kRepetition };
const char* finish_reason_name(FinishReason reason);  // "stop", "length", ..., "repetition"

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;     // prompt tokens served from the prefix cache (first admission)
  int64_t reasoning_tokens = 0;  // output tokens inside the thinking segment
  int64_t repetition_hits = 0;   // tokens at which the repetition guard saw a loop
  double queue_seconds = 0;      // submit -> first scheduled in a step (0 if it never ran)
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // most likely first
};

// One step's news for one request. The last event of a request has `finish` set.
struct Event {
  uint64_t request_id = 0;
  std::vector<int32_t> tokens;         // ids generated this step (stop ids and EOS included)
  std::string text;                    // complete UTF-8; held back while it may begin a stop string
  std::vector<TokenLogprob> logprobs;  // [tokens] when requested
  std::optional<FinishReason> finish;
  std::optional<std::string> stop_string;  // the stop string that finished it
  std::optional<int32_t> stop_token;       // the stop id / EOS that finished it
  Usage usage;                             // with finish
  std::string error;                       // with FinishReason::kError
};

using EventCallback = std::function<void(const Event&)>;

// submit() refused the request; nothing was queued or allocated.
class RequestError : public Error {
 public:
  enum class Kind { kInvalid, kTooLong, kBusy, kUnavailable };
  RequestError(Kind kind, const std::string& message) : Error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

}  // namespace tessera::engine
