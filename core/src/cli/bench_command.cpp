// tessera bench decode | device | attention | gemm | sampler: the batch-1 decode table of a random
// model (bench/decode_bench.hpp), decode steps of a configured model on its device
// (bench/device_bench.hpp), its attention plugins side by side (bench/attention_bench.hpp), the
// GEMM kernels on a decode step's shapes (bench/gemm_bench.hpp) and one step's sampling
// (bench/sampler_bench.hpp).
#include <fmt/format.h>

#include <memory>

#include "bench/attention_bench.hpp"
#include "bench/decode_bench.hpp"
#include "bench/device_bench.hpp"
#include "bench/gemm_bench.hpp"
#include "bench/machine.hpp"
#include "bench/sampler_bench.hpp"
#include "cli/commands.hpp"

namespace tessera::cli {

void add_bench_command(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks (tables for docs/perf.md)");
  bench->require_subcommand(1);
  auto options = std::make_shared<bench::DecodeBenchOptions>();
  auto* decode =
      bench->add_subcommand("decode", "batch-1 decode of a random checkpoint vs copy bandwidth");
  decode->add_option("--preset", options->preset, "model size: 50m | tiny")->capture_default_str();
  decode->add_option("--tokens", options->decode_tokens, "decode steps timed")
      ->capture_default_str();
  decode->add_option("--prompt-tokens", options->prompt_tokens, "prefill length")
      ->capture_default_str();
  decode->add_flag("--bf16-weights", options->bf16_weights,
                   "linear weights rounded to bfloat16 and kept in bf16, as a real checkpoint's");
  decode->add_option("--threads", options->threads,
                     "threads of the decode (BLAS) and of the copy loop (0: all)");
  decode->add_option("--plugin-dir", options->plugin_dir, "extra plugin directory");
  decode->callback([options] {
    const auto result = bench::run_decode_bench(*options);
    fmt::print("machine: {}\n\n{}", bench::machine_description(),
               bench::format_decode_table(*options, result));
  });
  auto device_options = std::make_shared<bench::DeviceBenchOptions>();
  auto* device = bench->add_subcommand(
      "device",
      "decode steps of a configured model on its device (cpu or cuda) at several batch sizes: "
      "time per token, bytes per step, GB/s against the device's copy bandwidth, block breakdown");
  device->add_option("-c,--config", device_options->config_path, "TOML configuration")->required();
  device->add_option("--batch", device_options->batches, "batch sizes (sequences per step)")
      ->delimiter(',')
      ->capture_default_str();
  device
      ->add_option("--context", device_options->context,
                   "tokens in every sequence's cache before the timed steps")
      ->capture_default_str();
  device->add_option("--steps", device_options->steps, "timed decode steps per batch size")
      ->capture_default_str();
  device
      ->add_option("--prefill", device_options->prefill,
                   "prompt lengths to time a prefill of (e.g. 1024,8192; one sequence)")
      ->delimiter(',');
  device
      ->add_option("--prefill-chunk", device_options->prefill_chunk,
                   "tokens per forward of a prefill")
      ->capture_default_str();
  device->callback([device_options] {
    fmt::print("{}", bench::format_device_bench(*device_options,
                                                bench::run_device_bench(*device_options)));
  });
  auto attention_options = std::make_shared<bench::AttentionBenchOptions>();
  auto* attention = bench->add_subcommand(
      "attention",
      "the attention plugins of a configuration side by side on its CUDA device (a GPU or the "
      "emulator) at several contexts: the plugin's time per decode step, GB/s against the "
      "device's copy bandwidth, speed-up");
  attention->add_option("-c,--config", attention_options->config_path, "TOML configuration")
      ->required();
  attention->add_option("--attention", attention_options->attentions, "attention plugins to time")
      ->delimiter(',')
      ->capture_default_str();
  attention
      ->add_option("--context", attention_options->contexts,
                   "tokens in every sequence's cache before the timed steps")
      ->delimiter(',')
      ->capture_default_str();
  attention->add_option("--batch", attention_options->batches, "batch sizes (sequences per step)")
      ->delimiter(',')
      ->capture_default_str();
  attention->add_option("--steps", attention_options->steps, "timed decode steps per cell")
      ->capture_default_str();
  attention->callback([attention_options] {
    fmt::print("{}", bench::format_attention_bench(*attention_options,
                                                   bench::run_attention_bench(*attention_options)));
  });
  auto gemm_options = std::make_shared<bench::GemmBenchOptions>();
  auto* gemm = bench->add_subcommand("gemm",
                                     "y = x W^T on a decode step's shapes: our AVX-512 and AVX2 "
                                     "kernels vs OpenBLAS, hot vs cold W");
  gemm->add_option("--threads", gemm_options->threads, "thread counts to run (e.g. 1,2)")
      ->delimiter(',')
      ->capture_default_str();
  gemm->add_option("--seconds", gemm_options->seconds_per_cell, "time per table cell")
      ->capture_default_str();
  gemm->callback([gemm_options] {
    fmt::print("machine: {}\n\n{}", bench::machine_description(),
               bench::run_gemm_bench(*gemm_options));
  });
  auto sampler_options = std::make_shared<bench::SamplerBenchOptions>();
  auto* sampler = bench->add_subcommand(
      "sampler", "one step's sampling: the sampler plugin on a batch of Gaussian logit rows");
  sampler->add_option("--sampler", sampler_options->sampler, "sampler plugin name")
      ->capture_default_str();
  sampler->add_option("--options", sampler_options->sampler_options, "the plugin's options (JSON)")
      ->capture_default_str();
  sampler->add_option("--plugin-dir", sampler_options->plugin_dir, "extra plugin directory");
  sampler->add_option("--rows", sampler_options->rows, "rows per call (running sequences)")
      ->capture_default_str();
  sampler->add_option("--vocab", sampler_options->vocab, "vocabulary sizes (e.g. 16384,129280)")
      ->delimiter(',')
      ->capture_default_str();
  sampler
      ->add_option("--logit-std", sampler_options->logit_std,
                   "spreads of the logits (small: flat rows, large: peaked rows)")
      ->delimiter(',')
      ->capture_default_str();
  sampler->add_option("--threads", sampler_options->threads, "thread counts to run (e.g. 1,2)")
      ->delimiter(',')
      ->capture_default_str();
  sampler->add_option("--seconds", sampler_options->seconds_per_cell, "time per table cell")
      ->capture_default_str();
  sampler
      ->add_option("--context-tokens", sampler_options->context_tokens,
                   "tokens in each row's context (prompt_tokens), handed over every step as the "
                   "engine does")
      ->check(CLI::Range(0, 1 << 24))
      ->capture_default_str();
  sampler
      ->add_option("--hints", sampler_options->hints,
                   "none: sample(); groups: sample_grouped() with each row's scan and column-group "
                   "maxima, found beforehand as the vocabulary head finds them")
      ->check(CLI::IsMember({"none", "groups"}))
      ->capture_default_str();
  sampler
      ->add_option("--settings", sampler_options->settings,
                   "sampling settings to run: greedy, t1 (temperature 1), top_p (T = 1, top_p "
                   "0.95); one alone is what a profiler wants")
      ->delimiter(',')
      ->check(CLI::IsMember({"greedy", "t1", "top_p"}))
      ->capture_default_str();
  sampler->callback([sampler_options] {
    fmt::print("machine: {}\n\n{}", bench::machine_description(),
               bench::run_sampler_bench(*sampler_options));
  });
}

}  // namespace tessera::cli
