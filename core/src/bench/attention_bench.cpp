#include "bench/attention_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "bench/device_bench.hpp"
#include "config/config.hpp"
#include "ops/compute_threads.hpp"
#include "runtime/runtime.hpp"
#include "util/check.hpp"

namespace tessera::bench {
namespace {

// The attention plugin's own block in the step timeline (model/device_attention.cpp).
constexpr const char* kPluginBlock = "attention: plugin (indexer + sparse attention)";

double block_ms(const DeviceBenchRow& row, const std::string& label) {
  const auto it = std::find_if(row.breakdown_ms.begin(), row.breakdown_ms.end(),
                               [&](const auto& e) { return e.first == label; });
  TS_CHECK(it != row.breakdown_ms.end(), "bench attention: the step timeline has no block `{}`",
           label);
  return it->second;
}

}  // namespace

AttentionBenchResult run_attention_bench(const AttentionBenchOptions& o) {
  TS_CHECK(!o.attentions.empty() && !o.contexts.empty() && !o.batches.empty() && o.steps >= 1,
           "bench attention: give attention plugins, contexts, batch sizes and --steps >= 1");
  for (const int64_t c : o.contexts) {
    TS_CHECK(c >= 1, "bench attention: context {} must be >= 1", c);
  }
  for (const int64_t b : o.batches) {
    TS_CHECK(b >= 1, "bench attention: batch {} must be >= 1", b);
  }
  AttentionBenchResult r;
  for (const int64_t c : o.contexts) {
    for (const int64_t b : o.batches) {
      r.rows.push_back({c, b, 0, std::vector<AttentionBenchCell>(o.attentions.size())});
    }
  }
  for (size_t p = 0; p < o.attentions.size(); ++p) {
    Config config = load_config_file(o.config_path);
    if (config.attention.plugin != o.attentions[p]) {  // the other plugin's options do not apply
      config.attention.plugin = o.attentions[p];
      config.attention.options_json = "{}";
    }
    const RuntimeOptions options = RuntimeOptions::from_config(config);
    TS_CHECK(options.device == "cuda",
             "bench attention: {} runs on [executor] device = \"{}\"; the per-block timing needs "
             "device = \"cuda\" (a GPU, or cuda_module = \"emulated\")",
             o.config_path, options.device);
    const int threads = config.executor.threads > 0
                            ? static_cast<int>(config.executor.threads)
                            : static_cast<int>(std::thread::hardware_concurrency());
    ops::set_compute_threads(threads);
    Runtime rt(options);
    if (p == 0) {
      r.device = rt.device()->describe();
      r.model = options.model_dir.string();
      r.kv_cache = rt.kv_format().name();
      r.copy_gbps = runtime_copy_gbps(rt, threads);
    }
    for (AttentionBenchRow& row : r.rows) {
      DeviceBenchOptions steps;
      steps.context = row.context;
      steps.steps = o.steps;
      DeviceBenchRow timed;
      try {
        timed = time_decode_steps(rt, steps, row.batch, r.copy_gbps);
      } catch (const Error& e) {
        TS_CHECK(false, "bench attention: `{}` at batch {}, context {}: {}", o.attentions[p],
                 row.batch, row.context, e.what());
      }
      row.kv_bytes = timed.kv_bytes;
      row.cells[p] = {block_ms(timed, kPluginBlock), timed.ms_per_step};
    }
  }
  return r;
}

std::string format_attention_bench(const AttentionBenchOptions& o, const AttentionBenchResult& r) {
  std::string s = fmt::format(
      "device: {}\nmodel: {} (kv cache `{}`), {} timed decode steps per cell\n"
      "copy bandwidth (device to device, read + write): {:.1f} GB/s\n\n"
      "attention plugin's block per decode step (indexer + top-k + sparse attention, all layers; "
      "timing events); GB/s: the step's kv bytes / that time\n\n| context | batch | kv MB / step |",
      r.device, r.model, r.kv_cache, o.steps, r.copy_gbps);
  std::string rule = "|---|---|---|";
  for (const std::string& a : o.attentions) {
    s += fmt::format(" `{0}` ms | `{0}` GB/s (% of copy) | `{0}` step ms |", a);
    rule += "---|---|---|";
  }
  const bool ratio = o.attentions.size() >= 2;
  if (ratio) {
    s += fmt::format(" `{}` speed-up over `{}` |", o.attentions.back(), o.attentions.front());
    rule += "---|";
  }
  s += "\n" + rule + "\n";
  for (const AttentionBenchRow& row : r.rows) {
    s += fmt::format("| {} | {} | {:.3f} |", row.context, row.batch, row.kv_bytes / 1e6);
    for (const AttentionBenchCell& cell : row.cells) {
      const double gbps = row.kv_bytes / (cell.plugin_ms * 1e-3) / 1e9;
      s += fmt::format(" {:.3f} | {:.3g} ({:.1f}%) | {:.2f} |", cell.plugin_ms, gbps,
                       100.0 * gbps / r.copy_gbps, cell.step_ms);
    }
    if (ratio) {
      s += fmt::format(" {:.2f}x |", row.cells.front().plugin_ms / row.cells.back().plugin_ms);
    }
    s += "\n";
  }
  return s;
}

}  // namespace tessera::bench
