// tessera bench engine: requests through the real engine (bench/engine_bench.hpp).
#include <fmt/format.h>

#include <memory>

#include "bench/engine_bench.hpp"
#include "cli/commands.hpp"

namespace tessera::cli {

void add_engine_bench_command(CLI::App& app) {
  CLI::App* bench = app.get_subcommand("bench");  // created by add_bench_command
  auto o = std::make_shared<engine::EngineBenchOptions>();
  auto* cmd = bench->add_subcommand(
      "engine", "continuous batching through the engine: throughput, TTFT/TPOT, host overhead");
  cmd->add_option("--preset", o->preset, "random-weight model: tiny | 50m")->capture_default_str();
  cmd->add_option("--model", o->model_dir, "a checkpoint directory instead of a preset");
  cmd->add_option("--tokenizer", o->tokenizer, "tokenizer.json (detokenize the output)");
  cmd->add_option("--concurrency", o->concurrency, "requests in flight (one row each)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--requests", o->requests, "requests per row (0: max(2 x concurrency, 16))");
  cmd->add_option("--warmup", o->warmup,
                  "untimed requests before each level (-1: the level's concurrency; 0: cold start)")
      ->capture_default_str();
  cmd->add_option("--rounds", o->rounds,
                  "run the levels this many times, alternating; each row sums its runs")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--prompt-tokens", o->prompt_tokens)->capture_default_str();
  cmd->add_option("--output-tokens", o->output_tokens)->capture_default_str();
  cmd->add_option("--tp", o->tensor_parallel, "tensor-parallel CPU ranks")->capture_default_str();
  cmd->add_option("--reduction-parts", o->reduction_parts,
                  "executor.reduction_parts: wo_b and w2 as this many tree-added products")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--prefix-cache", o->prefix_cache, "turn the prefix cache on");
  cmd->add_option("--memory-gib", o->memory_gib, "kv cache")->capture_default_str();
  cmd->add_option("--temperature", o->temperature)->capture_default_str();
  cmd->add_option("--top-p", o->top_p, "nucleus sampling (1: off)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--weights", o->weights,
                  "linear weights: fp32 | bf16 (default: as served; a preset's bf16 are its "
                  "random values rounded, as a real checkpoint's)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--dtype", o->dtype,
                  "activations of the linear layers: fp32 | bf16 (model.dtype; bf16 multiplies "
                  "the weights held in bf16)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--plugin-dir", o->plugin_dir, "extra plugin directory");
  cmd->add_option("--sampler-options", o->sampler_options,
                  "the sampler plugin's options as JSON, e.g. '{\"draw\":\"inverse_cdf\"}'")
      ->capture_default_str();
  cmd->callback([o] {
    const auto rows = engine::run_engine_bench(*o);
    fmt::print("{}", engine::format_engine_bench(*o, rows));
  });
}

}  // namespace tessera::cli
