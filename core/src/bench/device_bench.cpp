#include "bench/device_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "bench/copy_bandwidth.hpp"
#include "bench/machine.hpp"
#include "bench/sizing_model.hpp"
#include "config/config.hpp"
#include "device/step_timeline.hpp"
#include "ops/compute_threads.hpp"
#include "runtime/runtime.hpp"
#include "util/check.hpp"

namespace tessera::bench {
namespace {

using Clock = std::chrono::steady_clock;

// c = a between two device buffers, bytes counted as read + write (STREAM's Copy), best of 5.
double device_copy_gbps(device::Device& device, const device::Stream& stream) {
  const size_t bytes = device.emulated() ? (16u << 20) : (512u << 20);
  const device::DeviceBuffer a = device.allocate(bytes), b = device.allocate(bytes);
  device.fill(a.data(), 1, bytes, stream);
  device.copy(b.data(), a.data(), bytes, device::CopyKind::kDeviceToDevice, stream);  // warm-up
  device.synchronize(stream);
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    device.copy(b.data(), a.data(), bytes, device::CopyKind::kDeviceToDevice, stream);
    device.synchronize(stream);
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, 2.0 * static_cast<double>(bytes) / s / 1e9);
  }
  return best;
}

// Deterministic token ids away from the first few (often special) ones.
int32_t token_at(int64_t i, int64_t vocab) {
  return static_cast<int32_t>(2 + (i * 7919 + 13) % (vocab - 2));
}

// The footprint a decode step reads: the checkpoint's stored formats on a device; on the CPU the
// linear weights as the host engine holds them (bf16 or fp32).
ModelFootprint footprint(const Runtime& rt) {
  if (rt.on_device()) {
    return footprint_of_checkpoint(rt.options().model_dir);
  }
  return footprint_of_config(
      rt.model_config(),
      rt.options().linear_weights_in_bf16 ? WeightFormat::Bf16 : WeightFormat::F32,
      rt.options().model_dir.string());
}

DeviceBenchRow run_batch(Runtime& rt, const DeviceBenchOptions& o, int64_t batch,
                         const ModelFootprint& model, double copy_gbps) {
  const int64_t vocab = rt.model_config().vocab_size;
  std::vector<std::unique_ptr<SequenceKv>> seqs;
  for (int64_t b = 0; b < batch; ++b) {
    seqs.push_back(rt.new_sequence());
  }
  // The context, one sequence and at most 256 tokens per forward.
  std::vector<int32_t> prompt(static_cast<size_t>(o.context));
  for (int64_t b = 0; b < batch; ++b) {
    for (size_t i = 0; i < prompt.size(); ++i) {
      prompt[i] = token_at(b * 131 + i, vocab);
    }
    for (int64_t at = 0; at < o.context; at += 256) {
      const int64_t n = std::min<int64_t>(256, o.context - at);
      dsv4::ForwardBatch prefill;
      prefill.chunks.push_back(
          {seqs[b].get(), std::span<const int32_t>(prompt.data() + at, n), false});
      (void)rt.model().forward(prefill);
    }
  }
  std::vector<int32_t> tokens(static_cast<size_t>(batch));
  auto step = [&](int64_t s, dsv4::ForwardStats* stats) {
    dsv4::ForwardBatch decode;
    for (int64_t b = 0; b < batch; ++b) {
      tokens[b] = token_at(s * 977 + b, vocab);
      decode.chunks.push_back({seqs[b].get(), std::span<const int32_t>(&tokens[b], 1), false});
    }
    (void)rt.model().forward(decode, stats);
  };
  step(0, nullptr);  // untimed: first-use allocations, plans (and the graphs' warm-up)
  const dsv4::DeviceModel* graphed = rt.device_model();
  const bool graphs = graphed != nullptr && graphed->graphs().enabled();
  if (graphs) {
    step(0, nullptr);  // untimed: the capture, so that the timed steps replay
  }
  const auto timed = [&](device::StepTimeline* timeline) {
    double seconds = 0;
    for (int64_t s = 1; s <= o.steps; ++s) {
      dsv4::ForwardStats stats;
      stats.timeline = timeline;
      const auto start = Clock::now();
      step(s, &stats);
      seconds += std::chrono::duration<double>(Clock::now() - start).count();
      if (timeline != nullptr) {
        timeline->finish();
      }
    }
    return 1e3 * seconds / static_cast<double>(o.steps);
  };
  const int64_t replayed = graphs ? graphed->graphs().stats().replayed_steps : 0;
  const double ms_per_step = timed(nullptr);
  // Whether every timed step replayed its graphs.
  const bool replayed_all =
      graphs && graphed->graphs().stats().replayed_steps - replayed == o.steps;
  // Where the time goes: the same steps with timing events between the blocks (eagerly: events
  // are not captured), on a device only.
  std::unique_ptr<device::StepTimeline> timeline;
  double ms_per_step_eager = 0;
  if (rt.on_device()) {
    timeline = std::make_unique<device::StepTimeline>(*rt.device(), rt.stream());
    ms_per_step_eager = timed(timeline.get());
  }
  DeviceBenchRow row;
  row.batch = batch;
  row.ms_per_step = ms_per_step;
  row.graphs = replayed_all;
  row.ms_per_step_eager = ms_per_step_eager;
  SizingOptions sizing;
  sizing.ranks = 1;
  sizing.context = o.context + o.steps / 2;
  sizing.kv_entry_bytes = static_cast<double>(rt.kv_format().main_layout().bytes_per_entry);
  sizing.index_entry_bytes = static_cast<double>(rt.kv_format().indexer_layout().bytes_per_entry);
  const StepCost cost = decode_step_cost(model, sizing, cpu_figures(copy_gbps, 1.0), batch);
  row.weight_bytes = cost.weight_bytes();
  row.kv_bytes = cost.kv_bytes + cost.index_bytes;
  row.gbps = (row.weight_bytes + row.kv_bytes) / (row.ms_per_step * 1e-3) / 1e9;
  if (timeline) {
    for (const auto& [label, ms] : timeline->totals_ms()) {
      row.breakdown_ms.emplace_back(label, ms / static_cast<double>(o.steps));
    }
  }
  return row;
}

// One sequence's prompt of `tokens` tokens in chunks of o.prefill_chunk, timed (after an untimed
// prefill of one chunk on another sequence, so that first-use costs stay out).
PrefillRow run_prefill(Runtime& rt, const DeviceBenchOptions& o, int64_t tokens) {
  const int64_t vocab = rt.model_config().vocab_size;
  std::vector<int32_t> prompt(static_cast<size_t>(tokens));
  for (size_t i = 0; i < prompt.size(); ++i) {
    prompt[i] = token_at(static_cast<int64_t>(i) * 3 + 1, vocab);
  }
  {
    auto warm = rt.new_sequence();
    dsv4::ForwardBatch b;
    b.chunks.push_back({warm.get(),
                        std::span<const int32_t>(
                            prompt.data(), static_cast<size_t>(std::min(tokens, o.prefill_chunk))),
                        false});
    (void)rt.model().forward(b);
  }
  auto seq = rt.new_sequence();
  std::unique_ptr<device::StepTimeline> timeline;
  if (rt.on_device()) {
    timeline = std::make_unique<device::StepTimeline>(*rt.device(), rt.stream());
  }
  PrefillRow row;
  row.tokens = tokens;
  for (int64_t at = 0; at < tokens; at += o.prefill_chunk) {
    const int64_t n = std::min(o.prefill_chunk, tokens - at);
    dsv4::ForwardBatch b;
    b.chunks.push_back({seq.get(), std::span<const int32_t>(prompt.data() + at, n), false});
    dsv4::ForwardStats stats;
    stats.timeline = timeline.get();
    const auto start = Clock::now();
    (void)rt.model().forward(b, &stats);
    row.seconds += std::chrono::duration<double>(Clock::now() - start).count();
    if (timeline) {
      timeline->finish();
    }
  }
  if (timeline) {
    row.breakdown_ms = timeline->totals_ms();
  }
  return row;
}

}  // namespace

double runtime_copy_gbps(Runtime& rt, int threads) {
  return rt.on_device() ? device_copy_gbps(*rt.device(), rt.stream())
                        : measure_copy_bandwidth(threads);
}

DeviceBenchRow time_decode_steps(Runtime& rt, const DeviceBenchOptions& o, int64_t batch,
                                 double copy_gbps) {
  return run_batch(rt, o, batch, footprint(rt), copy_gbps);
}

DeviceBenchResult run_device_bench(const DeviceBenchOptions& o) {
  TS_CHECK(!o.batches.empty() && o.context >= 1 && o.steps >= 1 && o.prefill_chunk >= 1,
           "bench device: give batch sizes, --context >= 1, --steps >= 1 and --prefill-chunk >= "
           "1");
  for (const int64_t n : o.prefill) {
    TS_CHECK(n >= 1, "bench device: --prefill {} must be >= 1", n);
  }
  for (const int64_t b : o.batches) {
    TS_CHECK(b >= 1, "bench device: batch {} must be >= 1", b);
  }
  const Config config = load_config_file(o.config_path);
  const RuntimeOptions options = RuntimeOptions::from_config(config);
  const int threads = config.executor.threads > 0
                          ? static_cast<int>(config.executor.threads)
                          : static_cast<int>(std::thread::hardware_concurrency());
  ops::set_compute_threads(threads);
  Runtime rt(options);
  DeviceBenchResult r;
  r.model = options.model_dir.string();
  r.attention = rt.attention().name();
  r.kv_cache = rt.kv_format().name();
  const std::string cpu = fmt::format("cpu: {}, {} threads", machine_description(), threads);
  r.device = !rt.on_device()                                   ? cpu
             : rt.device()->kind() == device::DeviceKind::kCpu ? cpu + ", the device forward"
                                                               : rt.device()->describe();
  r.copy_gbps = runtime_copy_gbps(rt, threads);
  const ModelFootprint model = footprint(rt);
  for (const int64_t b : o.batches) {
    try {
      r.rows.push_back(run_batch(rt, o, b, model, r.copy_gbps));
    } catch (const Error& e) {
      TS_CHECK(false, "bench device: batch {} of {} + {} tokens: {}", b, o.context, o.steps + 1,
               e.what());
    }
  }
  for (const int64_t n : o.prefill) {
    try {
      r.prefills.push_back(run_prefill(rt, o, n));
    } catch (const Error& e) {
      TS_CHECK(false, "bench device: a prefill of {} tokens: {}", n, e.what());
    }
  }
  return r;
}

namespace {

std::string format_prefills(const DeviceBenchOptions& o, const DeviceBenchResult& r) {
  if (r.prefills.empty()) {
    return "";
  }
  std::string s = fmt::format(
      "\nprefill of one prompt, {} tokens per forward\n\n| prompt tokens | seconds | tokens/s | "
      "largest block (ms, share) |\n|---|---|---|---|\n",
      o.prefill_chunk);
  for (const PrefillRow& p : r.prefills) {
    std::string largest = "-";
    double total = 0;
    const std::pair<std::string, double>* top = nullptr;
    for (const auto& block : p.breakdown_ms) {
      total += block.second;
      if (top == nullptr || block.second > top->second) {
        top = &block;
      }
    }
    if (top != nullptr && total > 0) {
      largest =
          fmt::format("{}: {:.1f} ({:.0f}%)", top->first, top->second, 100.0 * top->second / total);
    }
    s += fmt::format("| {} | {:.3f} | {:.1f} | {} |\n", p.tokens, p.seconds,
                     static_cast<double>(p.tokens) / p.seconds, largest);
  }
  return s;
}

}  // namespace

std::string format_device_bench(const DeviceBenchOptions& o, const DeviceBenchResult& r) {
  std::string s = fmt::format(
      "device: {}\nmodel: {} (attention `{}`, kv cache `{}`), context {} tokens, {} timed steps\n"
      "copy bandwidth ({}, read + write): {:.1f} GB/s\n\n",
      r.device, r.model, r.attention, r.kv_cache, o.context, o.steps,
      r.rows.empty() || r.rows.front().breakdown_ms.empty() ? "host memory, STREAM copy"
                                                            : "device to device",
      r.copy_gbps);
  if (!r.rows.empty() && !r.rows.front().breakdown_ms.empty()) {
    s += r.rows.front().graphs
             ? "decode steps replay piecewise CUDA graphs (executor.cuda_graphs)\n\n"
         : r.device.starts_with("cpu")
             ? "decode steps of the device forward on the cpu backend (executor.cpu_forward = "
               "\"device\")\n\n"
             : "decode steps run eagerly (executor.cuda_graphs = false)\n\n";
  }
  s += "| batch | ms / step | ms / output token | tokens/s | weight MB / step | kv MB / step | "
       "GB/s | % of copy |\n|---|---|---|---|---|---|---|---|\n";
  for (const DeviceBenchRow& row : r.rows) {
    const auto b = static_cast<double>(row.batch);
    s += fmt::format("| {} | {:.2f} | {:.3f} | {:.1f} | {:.2f} | {:.3f} | {:.2f} | {:.1f}% |\n",
                     row.batch, row.ms_per_step, row.ms_per_step / b, b / (row.ms_per_step * 1e-3),
                     row.weight_bytes / 1e6, row.kv_bytes / 1e6, row.gbps,
                     100.0 * row.gbps / r.copy_gbps);
  }
  if (r.rows.empty() || r.rows.front().breakdown_ms.empty()) {
    return s + format_prefills(o, r);
  }
  s += "\nwhere a step's time goes (ms per step; the same steps again, eagerly, with timing events "
       "on the stream)\n\n| block |";
  std::string rule = "|---|";
  for (const DeviceBenchRow& row : r.rows) {
    s += fmt::format(" batch {} |", row.batch);
    rule += "---|";
  }
  s += "\n" + rule + "\n";
  // Blocks by their time at the first batch size, largest first; then the events' sum per step.
  std::vector<std::pair<std::string, double>> blocks = r.rows.front().breakdown_ms;
  std::stable_sort(blocks.begin(), blocks.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& block : blocks) {
    const std::string& label = block.first;
    s += "| " + label + " |";
    for (const DeviceBenchRow& row : r.rows) {
      const auto it = std::find_if(row.breakdown_ms.begin(), row.breakdown_ms.end(),
                                   [&](const auto& e) { return e.first == label; });
      s += it == row.breakdown_ms.end() ? " - |" : fmt::format(" {:.3f} |", it->second);
    }
    s += "\n";
  }
  s += "| sum of the blocks |";
  for (const DeviceBenchRow& row : r.rows) {
    double sum = 0;
    for (const auto& [label, ms] : row.breakdown_ms) {
      sum += ms;
    }
    s += fmt::format(" {:.3f} |", sum);
  }
  s += "\n| ms / step of these steps (eager, events on the stream; host included) |";
  for (const DeviceBenchRow& row : r.rows) {
    s += fmt::format(" {:.3f} |", row.ms_per_step_eager);
  }
  return s + "\n" + format_prefills(o, r);
}

}  // namespace tessera::bench
