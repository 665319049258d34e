#include "serve/serve_request.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "chat/chat_prompt.hpp"
#include "chat/chat_types.hpp"
#include "serve/plain_content.hpp"
#include "tessera/bounded_json.hpp"
#include "tessera/sampling_fields.hpp"

namespace tessera::serve {

namespace {

using Json = chat::Json;
using Kind = InvalidRequest::Kind;

[[noreturn]] void invalid(const std::string& message) {
  throw InvalidRequest(Kind::kInvalid, message);
}

const Json* field(const Json& request, const char* key) {
  const auto it = request.find(key);
  return it == request.end() || it->is_null() ? nullptr : &*it;
}

// A sampling number, checked against its row of tessera/sampling_fields.hpp.
std::optional<double> number(const Json& r, const sdk::NumberField& f) {
  const std::string key(f.name);
  const Json* v = field(r, key.c_str());
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) invalid(fmt::format("'{}' must be a number", key));
  const double x = v->get<double>();
  if (!sdk::in_range(f, x)) {
    invalid(fmt::format("'{}' must be in {}, got {}", key, sdk::range_text(f), x));
  }
  return x;
}

std::optional<int64_t> integer(const Json& r, const char* key, int64_t lo, int64_t hi) {
  const Json* v = field(r, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer() && !v->is_number_unsigned()) {
    invalid(fmt::format("'{}' must be an integer", key));
  }
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi)) {
    invalid(fmt::format("'{}' must be in [{}, {}]", key, lo, hi));
  }
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi) invalid(fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, x));
  return x;
}

std::optional<bool> boolean(const Json& r, const char* key) {
  const Json* v = field(r, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) invalid(fmt::format("'{}' must be a boolean", key));
  return v->get<bool>();
}

std::vector<int32_t> token_ids(const Json& value, const char* key, int32_t vocab) {
  if (!value.is_array()) invalid(fmt::format("'{}' must be an array of token ids", key));
  std::vector<int32_t> ids;
  ids.reserve(value.size());
  for (const auto& id : value) {
    if (!id.is_number_integer() && !id.is_number_unsigned()) {
      invalid(fmt::format("'{}' must hold integers", key));
    }
    const int64_t v =
        id.is_number_unsigned() && id.get<uint64_t>() > INT32_MAX ? INT64_MAX : id.get<int64_t>();
    if (v < 0 || v >= vocab) {
      invalid(fmt::format("'{}': token id {} is outside the vocabulary [0, {})", key, v, vocab));
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

void read_prompt(const Json& r, const tokenizer::Tokenizer& tokenizer, const ServeLimits& limits,
                 ServeRequest& out) {
  const Json* messages = field(r, "messages");
  const Json* text = field(r, "prompt");
  const Json* ids = field(r, "prompt_token_ids");
  if ((messages != nullptr) + (text != nullptr) + (ids != nullptr) != 1) {
    invalid("give exactly one of 'messages', 'prompt' or 'prompt_token_ids'");
  }
  if (limits.token_ids_only && ids == nullptr) {
    invalid(
        fmt::format("'{}': the model has no tokenizer.json, so text cannot be encoded: give the "
                    "prompt as token ids ('prompt_token_ids', or 'prompt' as an array of ids)",
                    messages != nullptr ? "messages" : "prompt"));
  }
  if (messages != nullptr) {
    // Special-token text in user and tool content stays text unless the request allows it
    // (serve/plain_content.hpp).
    const bool allow_special = boolean(r, "allow_special_tokens_in_content").value_or(false);
    PlainMarkers markers;
    chat::Json marked;
    if (!allow_special) {
      markers = make_plain_markers();
      marked = mark_special_text_in_content(r, tokenizer, markers);
    }
    chat::ChatPrompt prompt;
    try {
      prompt = chat::render_chat_prompt(markers.wrapped > 0 ? marked : r, limits.effort_profile);
      out.base.prompt = encode_with_plain_spans(prompt.text, markers, tokenizer);
    } catch (const chat::ChatEncodingError& e) {
      invalid(e.what());
    }
    out.chat = true;
    out.thinking = prompt.mode;
  } else if (text != nullptr) {
    if (!text->is_string()) invalid("'prompt' must be a string");
    try {
      out.base.prompt = tokenizer.encode(text->get_ref<const std::string&>());
    } catch (const Error& e) {
      invalid(std::string("'prompt': ") + e.what());
    }
  } else {
    out.base.prompt = token_ids(*ids, "prompt_token_ids", tokenizer.vocab_size());
  }
  if (out.base.prompt.empty()) invalid("the prompt is empty");
}

std::vector<std::string> strings(const Json& r, const char* key) {
  const Json* v = field(r, key);
  std::vector<std::string> out;
  if (v == nullptr) return out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (const auto& s : *v) {
      if (!s.is_string()) invalid(fmt::format("'{}' must be a string or an array of strings", key));
      out.push_back(s.get<std::string>());
    }
  } else {
    invalid(fmt::format("'{}' must be a string or an array of strings", key));
  }
  for (const auto& s : out) {
    if (s.empty()) invalid(fmt::format("'{}' must not contain empty strings", key));
  }
  return out;
}

}  // namespace

std::string context_length_message(int64_t max_context, int64_t prompt_tokens,
                                   std::optional<int64_t> max_tokens) {
  if (!max_tokens) {
    return fmt::format(
        "This model's maximum context length is {} tokens. However, your request has {} input "
        "tokens. Please reduce the length of the input messages.",
        max_context, prompt_tokens);
  }
  return fmt::format(
      "This model's maximum context length is {} tokens. However, you requested {} tokens ({} in "
      "the messages, {} in the completion). Please reduce the length of the messages or "
      "completion.",
      max_context, prompt_tokens + *max_tokens, prompt_tokens, *max_tokens);
}

ServeRequest parse_serve_request(std::string_view request_json,
                                 const tokenizer::Tokenizer& tokenizer, const ServeLimits& limits) {
  sdk::BoundedJsonResult parsed = sdk::parse_bounded_json(request_json);
  if (!parsed.ok()) invalid("the request is refused: " + parsed.message());
  return serve_request_from_json(parsed.value, tokenizer, limits);
}

ServeRequest serve_request_from_json(const Json& r, const tokenizer::Tokenizer& tokenizer,
                                     const ServeLimits& limits) {
  if (!r.is_object()) invalid("the request must be a JSON object");
  ServeRequest out;
  read_prompt(r, tokenizer, limits, out);
  engine::Request& q = out.base;
  out.n = integer(r, "n", 1, limits.max_n).value_or(1);
  const auto max_tokens = integer(r, "max_tokens", 1, limits.max_tokens);
  if (max_tokens) q.max_tokens = *max_tokens;

  auto& s = q.sampling;
  s.temperature = number(r, sdk::kTemperature);
  s.top_p = number(r, sdk::kTopP);
  s.top_k = integer(r, "top_k", 0, tokenizer.vocab_size());
  s.min_p = number(r, sdk::kMinP);
  s.repetition_penalty = number(r, sdk::kRepetitionPenalty);
  s.frequency_penalty = number(r, sdk::kFrequencyPenalty);
  s.presence_penalty = number(r, sdk::kPresencePenalty);
  if (const auto seed = integer(r, "seed", std::numeric_limits<int64_t>::min(),
                                std::numeric_limits<int64_t>::max())) {
    s.seed = static_cast<uint64_t>(*seed);
  }
  q.stop = strings(r, "stop");
  if (const Json* ids = field(r, "stop_token_ids")) {
    q.stop_token_ids = token_ids(*ids, "stop_token_ids", tokenizer.vocab_size());
  }
  q.ignore_eos = boolean(r, "ignore_eos").value_or(false);
  q.skip_special_tokens = boolean(r, "skip_special_tokens").value_or(true);
  out.include_stop_str_in_output = boolean(r, "include_stop_str_in_output").value_or(false);
  if (integer(r, "min_tokens", 0, limits.max_tokens).value_or(0) > 0) {
    invalid("'min_tokens' is not supported by this engine");
  }
  q.logprobs = boolean(r, "logprobs").value_or(false);
  q.top_logprobs =
      static_cast<int32_t>(integer(r, "top_logprobs", 0, limits.max_logprobs).value_or(0));
  if (q.top_logprobs > 0) q.logprobs = true;
  if (const Json* salt = field(r, "cache_salt")) {
    if (!salt->is_string()) invalid("'cache_salt' must be a string");
    q.cache_salt = salt->get<std::string>();
  }
  q.priority = static_cast<int32_t>(integer(r, "priority", -1000000, 1000000).value_or(0));
  // Tessera extensions (docs/generation.md): the thinking budget and the degeneration guard.
  q.max_reasoning_tokens = integer(r, "max_reasoning_tokens", 0, 1 << 30);
  if (const Json* guard = field(r, "repetition_guard")) {
    if (!guard->is_string() || (*guard != "off" && *guard != "warn" && *guard != "stop"))
      invalid("'repetition_guard' must be one of \"off\", \"warn\", \"stop\"");
    q.repetition_guard = guard->get<std::string>();
  }

  // Refused before anything is queued: vLLM's rule and wording.
  const auto prompt_tokens = static_cast<int64_t>(q.prompt.size());
  if (limits.max_context > 0 &&
      (prompt_tokens >= limits.max_context ||
       (max_tokens && prompt_tokens + *max_tokens > limits.max_context))) {
    throw InvalidRequest(Kind::kTooLong,
                         context_length_message(limits.max_context, prompt_tokens, max_tokens));
  }
  return out;
}

}  // namespace tessera::serve
