// `tessera bench engine`: drives requests through the real engine (scheduler, executor, sampler
// plugin, detokenizer, event dispatcher) at several concurrency levels, closed loop (a finished
// request is replaced at once), and reports throughput, TTFT / TPOT percentiles and the host
// overhead per step (step time outside the model forward), and beside it the output work done off
// the loop, overlapping the forward. Targets live in docs/perf.md, not in
// tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::engine {

struct EngineBenchOptions {
  std::string preset = "tiny";  // random weights: "tiny" | "50m" (bench decode's presets)
  std::string model_dir;        // a checkpoint instead of a preset
  std::string tokenizer;        // tokenizer.json for detokenization (optional)
  std::string plugin_dir;
  std::string sampler_options = "{}";  // [sampler.options] as JSON (A/B of the sampler's draws)
  std::vector<int64_t> concurrency{1, 64};
  int64_t requests = 0;  // per level; 0: max(2 * concurrency, 16)
  // Untimed requests (2 output tokens each) run before each level, all at once: they warm what a
  // serving process has warm after its first minute (the heap, the window-buffer cache, the cache
  // pages). -1: the level's concurrency; 0: none (cold start).
  int64_t warmup = -1;
  // Levels run this many times, alternating (1, 64, 1, 64, ...); each row sums its level's runs.
  // On a machine whose speed drifts for minutes at a time, the ratio of two levels run once each
  // measures the drift as much as the batching; several short rounds spread it over both.
  int64_t rounds = 1;
  int64_t prompt_tokens = 128;
  int64_t output_tokens = 64;
  int tensor_parallel = 1;
  int reduction_parts = 1;  // executor.reduction_parts
  bool prefix_cache = false;
  double memory_gib = 0.5;
  double temperature = 1.0;
  double top_p = 1.0;  // 1: off (the sampler's vectorised path); < 1: its scalar top-p path
  // Linear weights in memory. "": as served (a checkpoint's bfloat16 values in bf16, a preset's
  // random values in fp32); "fp32": all in fp32; "bf16": a preset's random values rounded to
  // bfloat16 and kept in bf16, as a real checkpoint's would be.
  std::string weights;
  // Activations of the linear layers: "fp32" (the CPU default) or "bf16" (model.dtype = "bf16":
  // weights held in bf16 multiply bf16-rounded inputs; needs --weights bf16 on a preset).
  std::string dtype = "fp32";
};

struct EngineBenchRow {
  int64_t concurrency = 0;
  int64_t requests = 0;
  double seconds = 0;
  double output_tokens_per_second = 0;
  double ttft_ms[3] = {0, 0, 0};  // p50, p90, p99
  double tpot_ms[3] = {0, 0, 0};
  int64_t steps = 0;
  double tokens_per_step = 0;
  double step_ms = 0;
  double host_us_per_step = 0;
  double schedule_us_per_step = 0, sample_us_per_step = 0, output_us_per_step = 0;
  double host_percent = 0;
  // Not host time: the events' text (detokenization, stop strings, the repetition guard) rendered
  // on the loop's compute helper while the next forward runs (engine/output_stage.hpp).
  double deferred_output_us_per_step = 0;
  std::vector<double> round_tokens_per_second;  // one per round
  // Measured before each round's run (bench/thread_handoff.hpp): on a VM whose two vCPUs now share
  // an L3 and now do not, these tell the two placements apart.
  std::vector<double> round_trip_ns, read_mib_us;
};

std::vector<EngineBenchRow> run_engine_bench(const EngineBenchOptions& options);
std::string format_engine_bench(const EngineBenchOptions& options,
                                const std::vector<EngineBenchRow>& rows);

}  // namespace tessera::engine
