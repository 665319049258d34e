// tessera bench model: the sizing model's predicted decode step per rank and time per output
// token (bench/sizing_model.hpp) for a checkpoint or a preset on 8 GPUs, or on this CPU (the
// copy bandwidth measured here) to compare with `tessera bench decode`.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/copy_bandwidth.hpp"
#include "bench/decode_bench.hpp"
#include "bench/hardware_figures.hpp"
#include "bench/machine.hpp"
#include "bench/sizing_model.hpp"
#include "bench/sizing_table.hpp"
#include "cli/commands.hpp"
#include "model/checkpoint_presets.hpp"

namespace tessera::cli {
namespace {

struct ModelBenchOptions {
  std::string checkpoint;
  std::string preset = "flash";
  std::string gpu = "h200";
  std::string weights = "official";
  std::string experts = "tp";
  bench::SizingOptions sizing;
  std::vector<int64_t> batches = {1, 8, 64, 256};
  double bandwidth_gbps = 0;  // cpu: 0 = measure
  double gflops = 100;        // cpu
  int threads = 1;            // cpu: copy-loop threads when measuring
  bool measure = false;       // cpu: run `bench decode` too and compare
};

void run(const ModelBenchOptions& o) {
  bench::SizingOptions sizing = o.sizing;
  sizing.experts =
      o.experts == "ep" ? bench::ExpertSplit::ExpertParallel : bench::ExpertSplit::TensorParallel;
  bench::HardwareFigures hw;
  std::optional<bench::DecodeBenchResult> measured;
  std::vector<int64_t> batches = o.batches;
  if (o.gpu == "cpu") {
    sizing.ranks = 1;
    if (o.measure) {  // the decode bench on the same preset; its copy bandwidth predicts
      bench::DecodeBenchOptions d;
      d.preset = o.preset;
      d.bf16_weights = o.weights == "bf16";
      d.threads = o.threads;
      measured = bench::run_decode_bench(d);
      sizing.context = d.prompt_tokens + d.decode_tokens / 2;   // the mean context of its steps
      const auto config = bench::bench_model_config(o.preset);  // its cache: kv `bf16`
      sizing.kv_entry_bytes = 2.0 * static_cast<double>(config.head_dim);
      sizing.index_entry_bytes = 2.0 * static_cast<double>(config.index_head_dim);
      batches = {1};
    }
    const double gbps = measured               ? measured->copy_gbps
                        : o.bandwidth_gbps > 0 ? o.bandwidth_gbps
                                               : bench::measure_copy_bandwidth(o.threads);
    hw = bench::cpu_figures(gbps, o.gflops);
    fmt::print("machine: {}\n", bench::machine_description());
  } else {
    hw = bench::gpu_figures(o.gpu);
  }
  bench::ModelFootprint model;
  if (!o.checkpoint.empty()) {
    model = bench::footprint_of_checkpoint(o.checkpoint);
  } else {
    const auto format = o.weights == "f32"    ? bench::WeightFormat::F32
                        : o.weights == "bf16" ? bench::WeightFormat::Bf16
                                              : bench::WeightFormat::Official;
    const auto config = o.preset == "50m" || o.preset == "tiny"
                            ? bench::bench_model_config(o.preset)
                            : dsv4::preset_model_config(o.preset);
    model = bench::footprint_of_config(config, format,
                                       fmt::format("preset {} ({} weights)", o.preset, o.weights));
  }
  fmt::print("{}", bench::format_sizing_table(model, sizing, hw, batches));
  if (measured) {
    const double predicted = bench::decode_step_cost(model, sizing, hw, 1).tokens_per_s();
    fmt::print(
        "\nmeasured (tessera bench decode --preset {}{} --threads {}): {:.1f} tok/s; predicted "
        "{:.1f} tok/s ({:+.1f}%)\n",
        o.preset, o.weights == "bf16" ? " --bf16-weights" : "", measured->threads,
        measured->tokens_per_second, predicted,
        100.0 * (predicted - measured->tokens_per_second) / measured->tokens_per_second);
  }
}

}  // namespace

void add_model_bench_command(CLI::App& app) {
  CLI::App* bench = app.get_subcommand("bench");  // created by add_bench_command
  auto o = std::make_shared<ModelBenchOptions>();
  auto* cmd = bench->add_subcommand(
      "model", "predicted decode step per rank and time per output token (a sizing model)");
  auto* checkpoint =
      cmd->add_option("--checkpoint", o->checkpoint, "checkpoint directory (shapes and formats)");
  cmd->add_option("--preset", o->preset, "shapes without a checkpoint: flash | pro | 50m | tiny")
      ->check(CLI::IsMember({"flash", "pro", "50m", "tiny"}))
      ->excludes(checkpoint)
      ->capture_default_str();
  cmd->add_option("--weights", o->weights,
                  "preset storage: official (FP8 / FP4 / BF16 as released) | f32 | bf16 (the CPU "
                  "engine's linear weights)")
      ->check(CLI::IsMember({"official", "f32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--gpu", o->gpu, "h200 | rtx-pro-6000 | cpu (this machine, one rank)")
      ->check(CLI::IsMember({"h200", "rtx-pro-6000", "cpu"}))
      ->capture_default_str();
  cmd->add_option("--gpus", o->sizing.ranks, "tensor-parallel ranks")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--experts", o->experts, "routed experts: tp | ep")
      ->check(CLI::IsMember({"tp", "ep"}))
      ->capture_default_str();
  cmd->add_option("--context", o->sizing.context, "tokens in each sequence's cache")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--batch", o->batches, "batch sizes (e.g. 1,8,64,256)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--bandwidth", o->bandwidth_gbps, "cpu: memory GB/s (0: measure the copy)")
      ->capture_default_str();
  cmd->add_option("--gflops", o->gflops, "cpu: compute GFLOP/s")->capture_default_str();
  cmd->add_option("--threads", o->threads, "cpu: copy-loop threads when measuring")
      ->capture_default_str();
  cmd->add_option("--kv-entry-bytes", o->sizing.kv_entry_bytes, "bytes per KV entry")
      ->capture_default_str();
  cmd->add_option("--index-entry-bytes", o->sizing.index_entry_bytes, "bytes per indexer key")
      ->capture_default_str();
  cmd->add_flag("--measure", o->measure,
                "cpu with --preset 50m | tiny: also run `bench decode` on it (weights f32 or bf16) "
                "and print measured against predicted, predicting from that run's copy bandwidth");
  cmd->callback([o] {
    if (o->measure && (o->gpu != "cpu" || (o->preset != "50m" && o->preset != "tiny") ||
                       !o->checkpoint.empty() || o->weights == "official")) {
      throw CLI::ValidationError("--measure",
                                 "needs --gpu cpu, --preset 50m or tiny and --weights f32 or bf16");
    }
    run(*o);
  });
}

}  // namespace tessera::cli
