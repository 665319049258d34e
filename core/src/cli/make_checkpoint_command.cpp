// tessera make-checkpoint: a random DeepSeek-V4 checkpoint in the official format at a released
// model's widths (model/checkpoint_presets.hpp, model/random_checkpoint.hpp), optionally with
// fewer layers, experts or vocabulary rows.
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "cli/commands.hpp"
#include "model/checkpoint_presets.hpp"
#include "model/random_checkpoint.hpp"
#include "ops/compute_threads.hpp"

namespace tessera::cli {
namespace {

struct MakeCheckpointOptions {
  std::string preset = "flash";
  dsv4::PresetReduction reduction;
  std::string out;
  uint64_t seed = 7;
  int threads = 0;  // 0: hardware threads
};

}  // namespace

void add_make_checkpoint_command(CLI::App& app) {
  auto o = std::make_shared<MakeCheckpointOptions>();
  auto* cmd = app.add_subcommand(
      "make-checkpoint",
      "write a random checkpoint in the official DeepSeek-V4 format (FP8 / FP4, official names)");
  cmd->add_option("--preset", o->preset, "widths: flash | pro")
      ->check(CLI::IsMember({"flash", "pro"}))
      ->capture_default_str();
  cmd->add_option("--layers", o->reduction.layers, "decoder layers (0: the model's own)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--experts", o->reduction.experts, "routed experts (0: the model's own)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--vocab", o->reduction.vocab, "vocabulary rows (0: 129280)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed")->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads drawing and encoding (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--out", o->out, "directory to write config.json and model.safetensors")
      ->required();
  cmd->callback([o] {
    const dsv4::ModelConfig config = dsv4::preset_model_config(o->preset, o->reduction);
    ops::set_compute_threads(
        o->threads > 0 ? o->threads : static_cast<int>(std::thread::hardware_concurrency()));
    const auto start = std::chrono::steady_clock::now();
    double last_report = 0;
    const uint64_t bytes = dsv4::write_random_checkpoint(
        config, o->out, o->seed, [&](const dsv4::CheckpointWriteProgress& p) {
          const double t =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          if (t - last_report < 5) return;
          last_report = t;
          fmt::print(stderr, "{:.1f} / {:.1f} GB ({})\n",
                     static_cast<double>(p.bytes_written) / 1e9,
                     static_cast<double>(p.bytes_total) / 1e9, p.tensor);
        });
    fmt::print("{}: {} layers, {} experts (top-{}), vocab {}, {:.3f} GB in model.safetensors\n",
               o->out, config.num_layers, config.n_routed_experts, config.experts_per_token,
               config.vocab_size, static_cast<double>(bytes) / 1e9);
  });
}

}  // namespace tessera::cli
