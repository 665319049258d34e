#include "bench/sampler_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "device/plugin_device.hpp"
#include "ops/compute_threads.hpp"
#include "ops/scan_columns.hpp"
#include "plugins/registry.hpp"
#include "util/check.hpp"

namespace tessera::bench {
namespace {

struct Setting {
  const char* key;  // --settings
  const char* name;
  float temperature;
  float top_p;
};

const Setting kSettings[] = {
    {"greedy", "greedy", 0.0f, 1.0f},
    {"t1", "T = 1", 1.0f, 1.0f},
    {"top_p", "T = 1, top_p 0.95", 1.0f, 0.95f},
};

// Standard normal deviates from splitmix64 + Box-Muller: reproducible, no <random> distribution
// whose output differs between standard libraries.
class Gaussian {
 public:
  explicit Gaussian(uint64_t seed) : state_(seed) {}
  double next() {
    const double u1 = (static_cast<double>(bits() >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = static_cast<double>(bits() >> 11) * 0x1.0p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  uint64_t bits() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

ts_sampling_params params_for(const Setting& s, uint64_t seed) {
  ts_sampling_params p{};
  p.temperature = s.temperature;
  p.top_p = s.top_p;
  p.repetition_penalty = 1.0f;
  p.seed = seed;
  return p;
}

// Every ring row's scan and column-group maxima, as the vocabulary head hands them over.
struct RingHints {
  std::vector<float> group_max;       // [ring rows, TS_LOGIT_GROUP_COUNT(vocab)]
  std::vector<ts_row_groups> groups;  // [ring rows]
};

RingHints ring_hints(const std::vector<float>& ring, int vocab) {
  const int64_t rows = static_cast<int64_t>(ring.size()) / vocab;
  const int64_t groups = TS_LOGIT_GROUP_COUNT(vocab);
  RingHints h;
  h.group_max.resize(static_cast<size_t>(rows * groups));
  h.groups.resize(static_cast<size_t>(rows));
  std::vector<ops::RowScan> scans(1);
  for (int64_t r = 0; r < rows; ++r) {
    ops::scan_columns(ring.data() + r * vocab, 1, vocab, 0, vocab, scans,
                      h.group_max.data() + r * groups, groups);
    h.groups[static_cast<size_t>(r)] = {{scans[0].max, scans[0].argmax},
                                        h.group_max.data() + r * groups};
  }
  return h;
}

// Seconds per sample() call (sample_grouped() with hints) over batches taken in turn from the
// ring.
double time_calls(const PluginInstance& sampler, const std::vector<float>& ring,
                  const RingHints* hints, size_t batches, int rows, int vocab,
                  const std::vector<int32_t>& context, const Setting& setting, double budget) {
  const auto& table = sampler.table<ts_sampler_table>();
  TS_CHECK(hints == nullptr ||
               (table.struct_size >= sizeof(ts_sampler_table) && table.sample_grouped != nullptr),
           "bench sampler: --hints groups needs a sampler with sample_grouped (ABI 1.2)");
  std::vector<ts_sampler_row> row_args(static_cast<size_t>(rows));
  std::vector<ts_sampler_result> results(static_cast<size_t>(rows));
  long calls = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    const float* batch = ring.data() + (static_cast<size_t>(calls) % batches) *
                                           static_cast<size_t>(rows) * static_cast<size_t>(vocab);
    for (int r = 0; r < rows; ++r) {
      ts_sampler_row& row = row_args[static_cast<size_t>(r)];
      row = {};
      row.logits = batch + static_cast<size_t>(r) * static_cast<size_t>(vocab);
      row.params = params_for(setting, static_cast<uint64_t>(r));
      row.prompt_tokens = context.data();
      row.n_prompt_tokens = static_cast<int64_t>(context.size());
      row.rng_counter = static_cast<uint64_t>(calls);
      results[static_cast<size_t>(r)] = {};
    }
    const size_t first_row = (static_cast<size_t>(calls) % batches) * static_cast<size_t>(rows);
    const ts_status status =
        hints == nullptr
            ? table.sample(sampler.get(), row_args.data(), rows, vocab, results.data())
            : table.sample_grouped(sampler.get(), row_args.data(), hints->groups.data() + first_row,
                                   rows, vocab, results.data());
    TS_CHECK(status.code == TS_OK, "bench sampler: sample failed: {}",
             status.message != nullptr ? status.message : "(no message)");
    ++calls;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (elapsed < budget || calls < 5);
  return elapsed / static_cast<double>(calls);
}

}  // namespace

std::string run_sampler_bench(const SamplerBenchOptions& options) {
  PluginRegistry registry;
  std::vector<std::filesystem::path> dirs = PluginRegistry::default_search_path();
  if (!options.plugin_dir.empty()) {
    dirs.insert(dirs.begin(), options.plugin_dir);
  }
  registry.discover(dirs);
  const LoadedPlugin& plugin = registry.find(TS_KIND_SAMPLER, options.sampler);
  const PluginInstance sampler =
      registry.create(plugin, options.sampler_options, device::kHostPluginDevice);
  const int threads_before = ops::compute_threads();
  std::string table = fmt::format(
      "sampler `{}` {}, hints {}, {} rows per call, {} context tokens a row; hot: the same rows "
      "every call (in cache, as after the vocabulary head), cold: rows from a 64 MiB ring\n\n| "
      "vocab | logit std | setting | threads "
      "| hot µs per call | hot µs per row | cold µs per call |\n|---|---|---|---|---|---|---|\n",
      options.sampler, options.sampler_options, options.hints, options.rows,
      options.context_tokens);
  for (const int vocab : options.vocab) {
    for (const double spread : options.logit_std) {
      // Enough batches that the ring (>= 64 MiB) does not stay in cache between calls.
      const size_t batch_floats = static_cast<size_t>(options.rows) * static_cast<size_t>(vocab);
      const size_t batches =
          std::max<size_t>(2, (size_t{64} << 20) / (batch_floats * sizeof(float)) + 1);
      std::vector<float> ring(batch_floats * batches);
      Gaussian gaussian(static_cast<uint64_t>(vocab) * 1000 + static_cast<uint64_t>(spread * 10));
      for (float& x : ring) {
        x = static_cast<float>(spread * gaussian.next());
      }
      RingHints hints;
      if (options.hints == "groups") {
        hints = ring_hints(ring, vocab);
      }
      const RingHints* h = options.hints == "groups" ? &hints : nullptr;
      std::vector<int32_t> context(static_cast<size_t>(options.context_tokens));
      for (size_t i = 0; i < context.size(); ++i) {
        context[i] = static_cast<int32_t>((i * 7919 + 1) % static_cast<size_t>(vocab));
      }
      for (const Setting& setting : kSettings) {
        if (std::find(options.settings.begin(), options.settings.end(), setting.key) ==
            options.settings.end()) {
          continue;
        }
        for (const int threads : options.threads) {
          ops::set_compute_threads(threads);
          const double hot = time_calls(sampler, ring, h, 1, options.rows, vocab, context, setting,
                                        options.seconds_per_cell);
          const double cold = time_calls(sampler, ring, h, batches, options.rows, vocab, context,
                                         setting, options.seconds_per_cell);
          table +=
              fmt::format("| {} | {} | {} | {} | {:.1f} | {:.2f} | {:.1f} |\n", vocab, spread,
                          setting.name, threads, hot * 1e6, hot * 1e6 / options.rows, cold * 1e6);
        }
      }
    }
  }
  ops::set_compute_threads(threads_before);
  return table;
}

}  // namespace tessera::bench
