// tessera generate: one prompt through the configured model and plugins, text streamed to stdout,
// one summary line on stderr (finish reason, token counts, speed).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "chat/chat_encoder.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "runtime/generator.hpp"
#include "runtime/runtime.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::cli {

namespace {

struct GenerateArgs {
  std::string config_path;
  std::string prompt;
  bool chat = false;
  bool think = false;
  std::optional<int64_t> max_tokens;
  std::optional<double> temperature, top_p, min_p;
  std::optional<int64_t> top_k, seed;
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

void run_generate(const GenerateArgs& args) {
  const Config config = load_config_file(args.config_path);
  Runtime runtime(RuntimeOptions::from_config(config));
  const auto tokenizer =
      tokenizer::Tokenizer::from_file(runtime.options().model_dir / "tokenizer.json");
  std::string text = args.prompt;
  if (args.chat) {
    chat::EncodeOptions options;
    options.thinking_mode = args.think ? chat::ThinkingMode::kThinking : chat::ThinkingMode::kChat;
    text = chat::encode_messages(
        chat::Json::array({chat::Json{{"role", "user"}, {"content", args.prompt}}}), options);
  }
  GenerateRequest request;
  request.prompt = tokenizer.encode(text);
  request.sampling = sampling_from(config.sampler.defaults, args);
  request.max_tokens = args.max_tokens.value_or(
      config.sampler.defaults.max_tokens > 0 ? config.sampler.defaults.max_tokens : 256);
  const GenerateResult result = generate(runtime, tokenizer, request, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  });
  std::fputc('\n', stdout);
  const auto n = static_cast<double>(result.tokens.size());
  fmt::print(stderr,
             "finish_reason={} prompt_tokens={} completion_tokens={} prefill={:.3f}s "
             "decode={:.1f} tok/s\n",
             result.finish_reason, result.prompt_tokens, result.tokens.size(),
             result.prefill_seconds, result.decode_seconds > 0 ? n / result.decode_seconds : 0.0);
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand("generate", "Generate text for one prompt (streams to stdout)");
  cmd->add_option("-c,--config", args->config_path, "TOML configuration")->required();
  cmd->add_option("-p,--prompt", args->prompt, "prompt text")->required();
  cmd->add_flag("--chat", args->chat,
                "wrap the prompt as a user message (DeepSeek-V4 chat encoding)");
  cmd->add_flag("--think", args->think, "thinking mode (with --chat)");
  cmd->add_option("--max-tokens", args->max_tokens, "tokens to generate");
  cmd->add_option("--temperature", args->temperature, "0 = greedy");
  cmd->add_option("--top-p", args->top_p);
  cmd->add_option("--top-k", args->top_k);
  cmd->add_option("--min-p", args->min_p);
  cmd->add_option("--seed", args->seed);
  cmd->callback([args] { run_generate(*args); });
}

}  // namespace tessera::cli
