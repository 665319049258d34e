// `tessera bench attention`: the attention plugins of one configuration side by side at several
// contexts. For each plugin (default `reference` and `mma`) the configuration's model is loaded
// with that plugin, and for each context and batch size decode steps are timed as
// `tessera bench device` times them (bench/device_bench.hpp). A row gives each plugin's time in
// its own block of the step (indexer + top-k + sparse attention, every layer: the timing events
// of device/step_timeline.hpp), the kv bytes the step reads (attention entries and indexer keys,
// from the sizing model), the GB/s that makes against the device's copy bandwidth, and the
// speed-up of the last plugin over the first. Needs a CUDA device (a GPU or the emulator): the
// host engine has no per-block timing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::bench {

struct AttentionBenchOptions {
  std::string config_path;
  std::vector<std::string> attentions{"reference", "mma"};
  std::vector<int64_t> contexts{4096, 16384, 65536};
  std::vector<int64_t> batches{1};
  int64_t steps = 4;  // timed decode steps per cell (after one untimed)
};

struct AttentionBenchCell {
  double plugin_ms = 0;  // the plugin's block per step, summed over the layers
  double step_ms = 0;    // the whole step (wall time)
};

struct AttentionBenchRow {
  int64_t context = 0, batch = 0;
  double kv_bytes = 0;                    // per step (sizing model)
  std::vector<AttentionBenchCell> cells;  // one per plugin, in options order
};

struct AttentionBenchResult {
  std::string device, model, kv_cache;
  double copy_gbps = 0;
  std::vector<AttentionBenchRow> rows;
};

AttentionBenchResult run_attention_bench(const AttentionBenchOptions& options);
std::string format_attention_bench(const AttentionBenchOptions& options,
                                   const AttentionBenchResult& result);

}  // namespace tessera::bench
