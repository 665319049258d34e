// tessera generate: one prompt through the configured model and plugins, text streamed to stdout,
// one summary line on stderr (finish reason, token counts, speed).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "chat/chat_encoder.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "generation/sampling_defaults.hpp"
#include "runtime/generator.hpp"
#include "runtime/runtime.hpp"
#include "tokenizer/model_tokenizer.hpp"
#include "tokenizer/tokenizer.hpp"
#include "util/check.hpp"

namespace tessera::cli {

namespace {

struct GenerateArgs {
  std::string config_path;
  std::string prompt;
  std::vector<int32_t> prompt_ids;  // instead of text (models without tokenizer.json)
  bool chat = false;
  bool think = false;
  std::optional<int64_t> max_tokens;
  std::optional<double> temperature, top_p, min_p;
  std::optional<int64_t> top_k, seed;
  std::vector<double> temperatures;  // side-by-side runs
};

ts_sampling_params sampling_from(const SamplingDefaults& d, const GenerateArgs& a) {
  ts_sampling_params p = neutral_sampling();
  p.temperature = static_cast<float>(a.temperature.value_or(d.temperature));
  p.top_p = static_cast<float>(a.top_p.value_or(d.top_p > 0 ? d.top_p : 1.0));
  p.top_k = static_cast<int32_t>(a.top_k.value_or(d.top_k));
  p.min_p = static_cast<float>(a.min_p.value_or(d.min_p));
  if (d.repetition_penalty > 0) p.repetition_penalty = static_cast<float>(d.repetition_penalty);
  p.frequency_penalty = static_cast<float>(d.frequency_penalty);
  p.presence_penalty = static_cast<float>(d.presence_penalty);
  p.seed = static_cast<uint64_t>(a.seed.value_or(d.seed >= 0 ? d.seed : 0));
  return p;
}

GenerateRequest make_request(const Config& config, const generation::ResolvedDefaults& defaults,
                             const GenerateArgs& args, std::vector<int32_t> prompt) {
  GenerateRequest request;
  request.prompt = std::move(prompt);
  request.sampling = sampling_from(defaults.values, args);
  request.max_tokens =
      args.max_tokens.value_or(defaults.values.max_tokens > 0 ? defaults.values.max_tokens : 256);
  const RepetitionGuard& guard = config.generation.repetition_guard;
  request.repetition_mode = guard.mode;
  if (guard.min_repeats > 0) request.repetition.min_repeats = guard.min_repeats;
  if (guard.max_ngram > 0) request.repetition.max_ngram = guard.max_ngram;
  return request;
}

std::string summary(const GenerateResult& r) {
  const auto n = static_cast<double>(r.tokens.size());
  return fmt::format(
      "finish_reason={} prompt_tokens={} completion_tokens={} repetition_hits={} prefill={:.3f}s "
      "decode={:.1f} tok/s",
      r.finish_reason, r.prompt_tokens, r.tokens.size(), r.repetition_hits, r.prefill_seconds,
      r.decode_seconds > 0 ? n / r.decode_seconds : 0.0);
}

// The prompt's ids: --prompt-ids as given (each inside the vocabulary), or --prompt's text
// (wrapped as a chat message with --chat) through the model's tokenizer.
std::vector<int32_t> prompt_tokens(const GenerateArgs& args, const tokenizer::ModelTokenizer& model,
                                   int64_t vocab_size) {
  if (!args.prompt_ids.empty()) {
    for (size_t i = 0; i < args.prompt_ids.size(); ++i)
      TS_CHECK(args.prompt_ids[i] >= 0 && args.prompt_ids[i] < vocab_size,
               "generate: --prompt-ids[{}] = {} is outside the vocabulary [0, {})", i,
               args.prompt_ids[i], vocab_size);
    return args.prompt_ids;
  }
  TS_CHECK(!model.ids_only,
           "generate: the model has no tokenizer.json, so text cannot be encoded: give the prompt "
           "as token ids with --prompt-ids 1,2,3");
  std::string text = args.prompt;
  if (args.chat) {
    chat::EncodeOptions options;
    options.thinking_mode = args.think ? chat::ThinkingMode::kThinking : chat::ThinkingMode::kChat;
    text = chat::encode_messages(
        chat::Json::array({chat::Json{{"role", "user"}, {"content", args.prompt}}}), options);
  }
  return model.tokenizer.encode(text);
}

void run_generate(const GenerateArgs& args) {
  TS_CHECK(args.prompt.empty() != args.prompt_ids.empty(),
           "generate: give exactly one of --prompt and --prompt-ids");
  TS_CHECK(args.prompt_ids.empty() || !args.chat,
           "generate: --chat wraps text; it cannot take --prompt-ids");
  const Config config = load_config_file(args.config_path);
  Runtime runtime(RuntimeOptions::from_config(config));
  const auto defaults =
      generation::resolve_sampling_defaults(config.sampler.defaults, runtime.options().model_dir);
  spdlog::info("{}", defaults.describe());
  const tokenizer::ModelTokenizer loaded = tokenizer::load_model_tokenizer(
      runtime.options().model_dir, runtime.model_config().vocab_size);
  const tokenizer::Tokenizer& tokenizer = loaded.tokenizer;
  const std::vector<int32_t> prompt =
      prompt_tokens(args, loaded, runtime.model_config().vocab_size);

  if (!args.temperatures.empty()) {  // side by side: one run per temperature, same seed
    std::vector<std::pair<double, GenerateResult>> runs;
    for (double t : args.temperatures) {
      GenerateArgs one = args;
      one.temperature = t;
      GenerateRequest request = make_request(config, defaults, one, prompt);
      if (const auto w = generation::greedy_warning(defaults, t); !w.empty()) spdlog::warn("{}", w);
      runs.emplace_back(t, generate(runtime, tokenizer, request));
    }
    for (const auto& [t, r] : runs) {
      fmt::print(
          "=== temperature {} | finish_reason {} | {} tokens | repetition guard {} ===\n{}\n\n", t,
          r.finish_reason, r.tokens.size(),
          r.repetition_hits > 0 ? fmt::format("FIRED ({} hits)", r.repetition_hits) : "quiet",
          r.text);
    }
    return;
  }
  GenerateRequest request = make_request(config, defaults, args, prompt);
  if (const auto w = generation::greedy_warning(defaults, request.sampling.temperature); !w.empty())
    spdlog::warn("{}", w);
  const GenerateResult result = generate(runtime, tokenizer, request, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  });
  std::fputc('\n', stdout);
  fmt::print(stderr, "{}\n", summary(result));
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand("generate", "Generate text for one prompt (streams to stdout)");
  cmd->add_option("-c,--config", args->config_path, "TOML configuration")->required();
  auto* text = cmd->add_option("-p,--prompt", args->prompt, "prompt text");
  auto* ids = cmd->add_option("--prompt-ids", args->prompt_ids,
                              "the prompt as comma-separated token ids (for checkpoints without "
                              "tokenizer.json, whose output then reads <id><id>...)")
                  ->delimiter(',')
                  ->excludes(text);
  text->excludes(ids);
  cmd->add_flag("--chat", args->chat,
                "wrap the prompt as a user message (DeepSeek-V4 chat encoding)");
  cmd->add_flag("--think", args->think, "thinking mode (with --chat)");
  cmd->add_option("--max-tokens", args->max_tokens, "tokens to generate");
  cmd->add_option("--temperature", args->temperature, "0 = greedy");
  cmd->add_option("--top-p", args->top_p);
  cmd->add_option("--top-k", args->top_k);
  cmd->add_option("--min-p", args->min_p);
  cmd->add_option("--seed", args->seed);
  cmd->add_option("--temperatures", args->temperatures,
                  "comma-separated temperatures: one run each, printed side by side")
      ->delimiter(',');
  cmd->callback([args] { run_generate(*args); });
}

}  // namespace tessera::cli
