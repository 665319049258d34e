#include "openai_request.hpp"

#include <fmt/format.h>

#include <limits>
#include <utility>

#include "tessera/sampling_fields.hpp"

namespace tessera::http {

namespace {

constexpr std::int64_t kInt64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::size_t kMaxTools = 256;

void check_model(const FieldReader& r, std::string_view served_model, GenerationPlan& plan) {
  const auto model = r.string("model");
  if (model && *model != served_model) {
    ApiError e;
    e.status = 404;
    e.message = fmt::format("The model `{}` does not exist. This server serves `{}`.", *model,
                            served_model);
    e.param = "model";
    e.code = "model_not_found";
    throw RequestError(std::move(e));
  }
  plan.model = std::string(served_model);
}

void unsupported(std::string_view param, std::string_view why) {
  reject(fmt::format("'{}' is not supported by this server: {}", param, why), std::string(param));
}

// Every choice of every prompt waits for a slot as one sequence; a request of more of them than
// limits.max_queue can never be admitted, so it is a 400 that says why, never a retryable 429.
void check_fan_out(const RequestLimits& limits, std::int64_t n, std::size_t prompts) {
  const auto sequences = n * static_cast<std::int64_t>(prompts);
  if (sequences > limits.max_queue) {
    reject(fmt::format("n x prompts = {} sequences, more than limits.max_queue = {} can ever "
                       "queue; lower n or send fewer prompts per request",
                       sequences, limits.max_queue),
           "n");
  }
}

// A non-streaming body is built whole in memory before it is sent: n x prompts x max_tokens
// tokens, each with 1 + top_logprobs logprob entries when asked. ~68 B per entry was measured
// (n = 8, top_logprobs = 20, max_tokens = 4000 made 46 MB); the bounds below are above that, so a
// request whose estimate exceeds max_response_bytes is refused before it runs. Streaming bodies
// are bounded by max_buffered_bytes of unsent data instead.
constexpr std::int64_t kBodyBytesPerToken = 16;
constexpr std::int64_t kBodyBytesPerLogprobEntry = 96;

void check_response_size(const RequestLimits& limits, const GenerationPlan& plan,
                         std::int64_t max_tokens, std::size_t prompts) {
  if (plan.stream) return;
  const std::int64_t entries = plan.logprobs ? 1 + plan.top_logprobs : 0;
  const double bytes =
      static_cast<double>(plan.n) * static_cast<double>(prompts) * static_cast<double>(max_tokens) *
      static_cast<double>(kBodyBytesPerToken + entries * kBodyBytesPerLogprobEntry);
  if (bytes > static_cast<double>(limits.max_response_bytes)) {
    reject(
        fmt::format("a non-streaming response of n = {} x {} prompt(s) x max_tokens = {}{} may "
                    "reach {:.1f} MiB, more than this server holds for one response ({:.1f} "
                    "MiB, max_buffered_bytes); stream it (\"stream\": true) or ask for less",
                    plan.n, prompts, max_tokens,
                    plan.logprobs ? fmt::format(" with top_logprobs = {}", plan.top_logprobs)
                                  : std::string(),
                    bytes / (1 << 20), static_cast<double>(limits.max_response_bytes) / (1 << 20)),
        !plan.logprobs                      ? "max_tokens"
        : plan.kind == ApiKind::kCompletion ? "logprobs"
                                            : "top_logprobs");
  }
}

// Sampling, stops and engine options shared by both APIs, copied into `out` under the engine's
// names. Absent fields stay absent: the engine applies [sampler.defaults].
void read_sampling(const FieldReader& r, const RequestLimits& limits, Json& out) {
  for (const sdk::NumberField& f : sdk::kSamplingNumberFields) {
    if (auto x = r.number(f.name, f.lo, f.hi, f.lo_open)) out[std::string(f.name)] = *x;
  }
  if (auto k = r.integer("top_k", sdk::kTopKOff, limits.vocab_size)) out["top_k"] = *k < 0 ? 0 : *k;
  if (auto s = r.integer("seed", kInt64Min, kInt64Max)) out["seed"] = *s;
  auto stops = r.string_or_strings("stop", static_cast<std::size_t>(limits.max_stop),
                                   static_cast<std::size_t>(limits.max_stop_bytes));
  if (!stops.empty()) out["stop"] = std::move(stops);
  auto stop_ids = r.integers("stop_token_ids", static_cast<std::size_t>(limits.max_stop), 0,
                             limits.vocab_size - 1);
  if (!stop_ids.empty()) out["stop_token_ids"] = std::move(stop_ids);
  if (auto b = r.boolean("ignore_eos")) out["ignore_eos"] = *b;
  if (auto b = r.boolean("skip_special_tokens")) out["skip_special_tokens"] = *b;
  if (auto b = r.boolean("include_stop_str_in_output")) out["include_stop_str_in_output"] = *b;
  if (auto m = r.integer("min_tokens", 0, limits.max_tokens)) out["min_tokens"] = *m;
  if (auto salt = r.string("cache_salt")) {
    if (salt->empty()) reject("'cache_salt' must not be empty", "cache_salt");
    out["cache_salt"] = *salt;
  }
  if (const Json* bias = r.get("logit_bias"); bias != nullptr) {
    if (!bias->is_object()) reject("'logit_bias' must be an object", "logit_bias");
    if (!bias->empty()) unsupported("logit_bias", "the sampler has no per-token bias");
  }
  if (const Json* format = r.get("response_format"); format != nullptr) {
    const Json* type = member(*format, "type");
    if (type == nullptr || !type->is_string()) {
      reject("'response_format' must be an object with a string 'type'", "response_format");
    }
    if (*type != "text") unsupported("response_format", "only {\"type\": \"text\"}");
  }
}

void read_stream(const FieldReader& r, GenerationPlan& plan) {
  plan.stream = r.boolean("stream").value_or(false);
  if (const Json* options = r.get("stream_options"); options != nullptr) {
    if (!options->is_object()) reject("'stream_options' must be an object", "stream_options");
    if (!plan.stream) {
      reject("'stream_options' can only be given when 'stream' is true", "stream_options");
    }
    const FieldReader o(*options);
    plan.include_usage = o.boolean("include_usage").value_or(false);
  }
}

std::int64_t read_n(const FieldReader& r, const RequestLimits& limits) {
  return r.integer("n", 1, limits.max_n).value_or(1);
}

void read_max_tokens(const FieldReader& r, const RequestLimits& limits, bool chat, Json& out) {
  // Chat: max_completion_tokens is the current name, max_tokens the deprecated one.
  std::optional<std::int64_t> m;
  if (chat) m = r.integer("max_completion_tokens", 1, limits.max_tokens);
  if (!m) m = r.integer("max_tokens", 1, limits.max_tokens);
  if (m) out["max_tokens"] = *m;
}

void read_tools(const FieldReader& r, GenerationPlan& plan, Json& out) {
  if (r.has("functions") || r.has("function_call")) {
    unsupported("functions", "use 'tools' and 'tool_choice'");
  }
  const Json* tools = r.get("tools");
  bool drop_tools = false;
  if (const Json* choice = r.get("tool_choice"); choice != nullptr) {
    if (choice->is_string() && (*choice == "none" || *choice == "auto")) {
      drop_tools = *choice == "none";
    } else if (choice->is_string() && *choice == "required") {
      unsupported("tool_choice", "\"required\" needs guided decoding; use \"auto\"");
    } else if (choice->is_object()) {
      unsupported("tool_choice", "a named function needs guided decoding; use \"auto\"");
    } else {
      reject("'tool_choice' must be \"none\", \"auto\", \"required\" or an object", "tool_choice");
    }
  }
  if (tools == nullptr) return;
  if (!tools->is_array()) reject("'tools' must be an array", "tools");
  if (tools->size() > kMaxTools) reject(fmt::format("at most {} tools", kMaxTools), "tools");
  for (const auto& tool : *tools) {
    const bool ok = tool.is_object() && tool.value("type", Json()) == "function" &&
                    tool.contains("function") && tool["function"].is_object() &&
                    tool["function"].contains("name") && tool["function"]["name"].is_string() &&
                    !tool["function"]["name"].get_ref<const std::string&>().empty();
    if (!ok) {
      reject("each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}", "tools");
    }
    const Json& params = tool["function"].value("parameters", Json());
    if (!params.is_null() && !params.is_object()) {
      reject("a tool's 'parameters' must be a JSON Schema object", "tools");
    }
  }
  if (!drop_tools && !tools->empty()) {
    out["tools"] = *tools;
    plan.tools_given = true;
  }
}

// DeepSeek's switches: thinking {"type": "enabled"|"disabled"}, chat_template_kwargs.thinking
// (or enable_thinking), reasoning_effort (top level or in chat_template_kwargs).
void read_thinking(const FieldReader& r, Json& out) {
  std::optional<bool> thinking;
  std::optional<std::string> effort = r.string("reasoning_effort");
  if (const Json* t = r.get("thinking"); t != nullptr) {
    const Json* type = member(*t, "type");
    if (type == nullptr || !(*type == "enabled" || *type == "disabled")) {
      reject("'thinking' must be {\"type\": \"enabled\"} or {\"type\": \"disabled\"}", "thinking");
    }
    thinking = *type == "enabled";
  }
  if (const Json* kwargs = r.get("chat_template_kwargs"); kwargs != nullptr) {
    if (!kwargs->is_object())
      reject("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    const FieldReader k(*kwargs);
    if (auto b = k.boolean("thinking")) thinking = *b;
    if (auto b = k.boolean("enable_thinking")) thinking = *b;
    if (auto e = k.string("reasoning_effort")) effort = *e;
  }
  if (thinking) out["thinking"] = *thinking;
  if (effort) out["reasoning_effort"] = *effort;
}

void read_logprobs_chat(const FieldReader& r, const RequestLimits& limits, GenerationPlan& plan,
                        Json& out) {
  plan.logprobs = r.boolean("logprobs").value_or(false);
  const auto top = r.integer("top_logprobs", 0, limits.max_logprobs);
  if (top && *top > 0 && !plan.logprobs) {
    reject("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  }
  plan.top_logprobs = top.value_or(0);
  if (plan.logprobs) {
    out["logprobs"] = true;
    out["top_logprobs"] = plan.top_logprobs;
  }
}

void read_messages(const FieldReader& r, Json& out) {
  const Json* messages = r.get("messages");
  if (messages == nullptr) reject("'messages' is required", "messages");
  if (!messages->is_array()) reject("'messages' must be an array", "messages");
  if (messages->empty()) reject("'messages' must contain at least one message", "messages");
  for (const auto& m : *messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      reject("each message must be an object with a string 'role'", "messages");
    }
  }
  out["messages"] = *messages;
}

}  // namespace

GenerationPlan parse_chat_request(std::string_view body, const RequestLimits& limits,
                                  std::string_view served_model) {
  const Json request = parse_json_object(body);
  const FieldReader r(request);
  GenerationPlan plan;
  plan.kind = ApiKind::kChat;
  check_model(r, served_model, plan);
  Json out = Json::object();
  read_messages(r, out);
  read_tools(r, plan, out);
  read_thinking(r, out);
  if (r.boolean("echo").value_or(false)) unsupported("echo", "chat completions never echo");
  if (!r.boolean("add_generation_prompt").value_or(true)) {
    unsupported("add_generation_prompt", "the assistant turn is always opened");
  }
  if (r.boolean("continue_final_message").value_or(false)) {
    unsupported("continue_final_message", "the assistant turn is always a new one");
  }
  (void)r.boolean("parallel_tool_calls");
  if (auto user = r.string("user")) out["user"] = *user;  // the live A/B key (docs/ab.md)
  // Special-token text in user / tool content is plain text unless the client opts in.
  if (auto b = r.boolean("allow_special_tokens_in_content")) {
    out["allow_special_tokens_in_content"] = *b;
  }
  read_stream(r, plan);
  plan.n = read_n(r, limits);
  read_max_tokens(r, limits, /*chat=*/true, out);
  read_sampling(r, limits, out);
  read_logprobs_chat(r, limits, plan, out);
  check_fan_out(limits, plan.n, 1);
  check_response_size(limits, plan, int_member(out, "max_tokens", limits.default_max_tokens), 1);
  out["n"] = plan.n;
  plan.engine_requests.push_back(out.dump());
  return plan;
}

GenerationPlan parse_completion_request(std::string_view body, const RequestLimits& limits,
                                        std::string_view served_model) {
  const Json request = parse_json_object(body);
  const FieldReader r(request);
  GenerationPlan plan;
  plan.kind = ApiKind::kCompletion;
  check_model(r, served_model, plan);
  if (r.has("suffix")) unsupported("suffix", "fill-in-the-middle is not served");
  read_stream(r, plan);
  plan.n = read_n(r, limits);
  if (const auto best_of = r.integer("best_of", 1, limits.max_n); best_of && *best_of != plan.n) {
    unsupported("best_of", "only best_of == n");
  }
  plan.echo = r.boolean("echo").value_or(false);
  Json common = Json::object();
  read_max_tokens(r, limits, /*chat=*/false, common);
  read_sampling(r, limits, common);
  if (auto user = r.string("user")) common["user"] = *user;  // the live A/B key (docs/ab.md)
  if (auto k = r.integer("logprobs", 0, limits.max_logprobs)) {
    plan.logprobs = true;
    plan.top_logprobs = *k;
    common["logprobs"] = true;
    common["top_logprobs"] = *k;
  }
  if (plan.echo && plan.logprobs) unsupported("echo", "echo together with logprobs");
  common["n"] = plan.n;

  // prompt: "text" | ["text", ...] | [id, ...] | [[id, ...], ...]
  const Json* prompt = r.get("prompt");
  if (prompt == nullptr) reject("'prompt' is required", "prompt");
  std::vector<Json> prompts;
  const auto add_ids = [&](const Json& ids) {
    if (ids.empty()) reject("a token-id prompt must not be empty", "prompt");
    for (const auto& id : ids) {
      if (!id.is_number_integer() && !id.is_number_unsigned()) {
        reject("'prompt' arrays must hold only integers or only strings", "prompt");
      }
      const auto v = id.is_number_unsigned() && id.get<std::uint64_t>() > INT64_MAX
                         ? INT64_MAX
                         : id.get<std::int64_t>();
      if (v < 0 || v >= limits.vocab_size) {
        reject(fmt::format("token id {} is outside the vocabulary [0, {})", v, limits.vocab_size),
               "prompt");
      }
    }
    prompts.push_back(Json{{"prompt_token_ids", ids}});
  };
  const auto add_text = [&](const Json& text) {
    if (text.get_ref<const std::string&>().empty()) reject("'prompt' must not be empty", "prompt");
    prompts.push_back(Json{{"prompt", text}});
  };
  if (prompt->is_string()) {
    add_text(*prompt);
  } else if (prompt->is_array() && !prompt->empty()) {
    if ((*prompt)[0].is_number()) {
      add_ids(*prompt);
    } else {
      if (prompt->size() > static_cast<std::size_t>(limits.max_prompts)) {
        reject(fmt::format("at most {} prompts per request", limits.max_prompts), "prompt");
      }
      for (const auto& p : *prompt) {
        if (p.is_string()) {
          add_text(p);
        } else if (p.is_array()) {
          add_ids(p);
        } else {
          reject(
              "'prompt' must be a string, an array of strings, of token ids, or of arrays of "
              "token ids",
              "prompt");
        }
      }
    }
  } else {
    reject("'prompt' must be a non-empty string or array", "prompt");
  }
  check_fan_out(limits, plan.n, prompts.size());
  check_response_size(limits, plan, int_member(common, "max_tokens", limits.default_max_tokens),
                      prompts.size());
  for (auto& p : prompts) {
    plan.echo_texts.push_back(p.contains("prompt") ? p["prompt"].get<std::string>() : "");
    for (auto it = common.begin(); it != common.end(); ++it) p[it.key()] = it.value();
    plan.engine_requests.push_back(p.dump());
  }
  return plan;
}

}  // namespace tessera::http
