#include "bench/engine_bench.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench/decode_bench.hpp"
#include "bench/machine.hpp"
#include "bench/thread_handoff.hpp"
#include "engine/engine.hpp"
#include "runtime/runtime.hpp"
#include "tokenizer/tokenizer.hpp"
#include "util/check.hpp"

namespace tessera::engine {

namespace {

using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::vector<int32_t> bench_prompt(uint64_t seed, int64_t length, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(length));
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 7;
  for (auto& id : ids) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    id = static_cast<int32_t>(3 + x % static_cast<uint64_t>(vocab - 3));
  }
  return ids;
}

struct Timing {
  Clock::time_point submitted, first, last;
  int64_t tokens = 0;
  bool done = false;
};

// One timed run of a level: what its requests saw and the engine's counters around it.
struct LevelRun {
  int64_t requests = 0;
  double seconds = 0;
  int64_t tokens = 0;
  std::vector<double> ttft, tpot;  // ms, one per request
  EngineStats before, after;
  bench::ThreadHandoff handoff;  // measured just before the run
};

LevelRun run_level(Runtime& rt, const tokenizer::Tokenizer* tok, const EngineBenchOptions& o,
                   int64_t concurrency) {
  EngineOptions eo;
  eo.max_running_sequences = std::max<int64_t>(concurrency, 1);
  eo.max_batched_tokens = std::max<int64_t>(2048, concurrency);
  eo.chunked_prefill_size = 512;
  eo.prefix_cache = o.prefix_cache;
  eo.max_tokens_limit = std::max<int64_t>(o.output_tokens, 1);
  eo.defaults.max_tokens = o.output_tokens;
  eo.tensor_parallel = o.tensor_parallel;
  eo.reduction_parts = o.reduction_parts;
  Engine engine(rt, eo, tok);
  const int64_t total = o.requests > 0 ? o.requests : std::max<int64_t>(2 * concurrency, 16);

  std::mutex mutex;
  std::condition_variable cv;
  std::map<uint64_t, Timing> timings;
  int64_t submitted = 0, finished = 0;
  std::function<void()> submit_one;
  EventCallback on_event = [&](const Event& e) {
    const auto now = Clock::now();
    bool replace = false;
    {
      std::lock_guard lock(mutex);
      Timing& t = timings[e.request_id];
      if (!e.tokens.empty()) {
        if (t.tokens == 0) t.first = now;
        t.last = now;
        t.tokens += static_cast<int64_t>(e.tokens.size());
      }
      if (e.finish) {
        t.done = true;
        ++finished;
        replace = submitted < total;
        cv.notify_all();
      }
    }
    if (replace) submit_one();  // closed loop: keep `concurrency` requests in flight
  };
  submit_one = [&] {
    Request r;
    int64_t index = 0;
    {
      std::lock_guard lock(mutex);
      if (submitted >= total) return;
      index = submitted++;
    }
    r.prompt =
        bench_prompt(static_cast<uint64_t>(index), o.prompt_tokens, rt.model_config().vocab_size);
    r.max_tokens = o.output_tokens;
    r.ignore_eos = true;
    r.sampling.temperature = o.temperature;
    r.sampling.top_p = o.top_p;
    r.sampling.seed = static_cast<uint64_t>(index);
    const auto at = Clock::now();
    const uint64_t id = engine.submit(std::move(r), on_event);
    std::lock_guard lock(mutex);
    timings[id].submitted = at;
  };

  const int64_t warmup = o.warmup >= 0 ? o.warmup : concurrency;
  for (int64_t i = 0; i < warmup; ++i) {
    Request r;
    r.prompt = bench_prompt(static_cast<uint64_t>(total + i), o.prompt_tokens,
                            rt.model_config().vocab_size);
    r.max_tokens = std::min<int64_t>(2, eo.max_tokens_limit);  // within the limit the run sets
    r.ignore_eos = true;
    engine.submit(std::move(r), [](const Event& /*event*/) {});
  }
  engine.wait_idle();

  const EngineStats before = engine.stats();
  const auto start = Clock::now();
  for (int64_t i = 0; i < concurrency; ++i) submit_one();
  {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return finished >= total; });
  }
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  engine.wait_idle();
  const EngineStats after = engine.stats();

  LevelRun run;
  run.requests = total;
  run.seconds = wall;
  run.before = before;
  run.after = after;
  for (const auto& [id, t] : timings) {
    run.tokens += t.tokens;
    run.ttft.push_back(std::chrono::duration<double, std::milli>(t.first - t.submitted).count());
    if (t.tokens > 1) {
      run.tpot.push_back(std::chrono::duration<double, std::milli>(t.last - t.first).count() /
                         static_cast<double>(t.tokens - 1));
    }
  }
  return run;
}

// A level's row from its runs (one per round): throughput and step times over all of them, so a
// machine whose speed drifts weighs on every level alike when the rounds alternate the levels.
EngineBenchRow summarize(int64_t concurrency, const std::vector<LevelRun>& runs) {
  EngineBenchRow row;
  row.concurrency = concurrency;
  row.requests = runs.front().requests;  // per run
  std::vector<double> ttft, tpot;
  int64_t tokens = 0, batched = 0;
  double host = 0, forward = 0, schedule = 0, sample = 0, output = 0, deferred = 0;
  for (const LevelRun& r : runs) {
    row.seconds += r.seconds;
    tokens += r.tokens;
    ttft.insert(ttft.end(), r.ttft.begin(), r.ttft.end());
    tpot.insert(tpot.end(), r.tpot.begin(), r.tpot.end());
    row.steps += r.after.steps - r.before.steps;
    batched += r.after.batched_tokens - r.before.batched_tokens;
    host += r.after.host_seconds - r.before.host_seconds;
    forward += r.after.forward_seconds - r.before.forward_seconds;
    schedule += r.after.schedule_seconds - r.before.schedule_seconds;
    sample += r.after.sample_seconds - r.before.sample_seconds;
    output += r.after.output_seconds - r.before.output_seconds;
    deferred += r.after.deferred_output_seconds - r.before.deferred_output_seconds;
    row.round_tokens_per_second.push_back(static_cast<double>(r.tokens) /
                                          std::max(1e-12, r.seconds));
    row.round_trip_ns.push_back(r.handoff.round_trip_ns);
    row.read_mib_us.push_back(r.handoff.read_mib_us);
  }
  row.output_tokens_per_second = static_cast<double>(tokens) / std::max(1e-12, row.seconds);
  const double ps[3] = {0.5, 0.9, 0.99};
  for (int i = 0; i < 3; ++i) {
    row.ttft_ms[i] = percentile(ttft, ps[i]);
    row.tpot_ms[i] = percentile(tpot, ps[i]);
  }
  if (row.steps > 0) {
    const double per_step = 1e6 / static_cast<double>(row.steps);
    row.tokens_per_step = static_cast<double>(batched) / static_cast<double>(row.steps);
    row.step_ms = (host + forward) * per_step * 1e-3;
    row.host_us_per_step = host * per_step;
    row.schedule_us_per_step = schedule * per_step;
    row.sample_us_per_step = sample * per_step;
    row.output_us_per_step = output * per_step;
    row.deferred_output_us_per_step = deferred * per_step;
    row.host_percent = 100.0 * host / std::max(1e-12, host + forward);
  }
  return row;
}

}  // namespace

std::vector<EngineBenchRow> run_engine_bench(const EngineBenchOptions& o) {
  RuntimeOptions ro;
  if (!o.plugin_dir.empty()) ro.plugin_dirs = {o.plugin_dir};
  ro.sampler_options_json = o.sampler_options;
  ro.memory_gib = o.memory_gib;
  ro.max_context = std::max<int64_t>(4096, o.prompt_tokens + o.output_tokens + 1);
  ro.bf16_activations = o.dtype == "bf16";
  for (const int64_t c : o.concurrency) {  // the device's compressor rings: one per sequence
    ro.max_running_sequences = std::max(ro.max_running_sequences, c);
  }
  std::unique_ptr<Runtime> rt;
  TS_CHECK(o.weights.empty() || o.weights == "fp32" || o.weights == "bf16",
           "--weights must be fp32 or bf16, got \"{}\"", o.weights);
  if (!o.model_dir.empty()) {
    ro.model_dir = o.model_dir;
    ro.linear_weights_in_bf16 = o.weights != "fp32";
    rt = std::make_unique<Runtime>(ro);
  } else {
    const dsv4::ModelConfig config = bench::bench_model_config(o.preset);
    rt = std::make_unique<Runtime>(
        ro, config, bench::bench_model_weights(config, o.weights == "bf16", ro.bf16_activations));
  }
  std::unique_ptr<tokenizer::Tokenizer> tok;
  if (!o.tokenizer.empty())
    tok = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_file(o.tokenizer));
  for (int64_t c : o.concurrency) {
    TS_CHECK(c >= 1, "concurrency must be at least 1, got {}", c);
  }
  TS_CHECK(o.rounds >= 1, "rounds must be at least 1, got {}", o.rounds);
  std::vector<std::vector<LevelRun>> runs(o.concurrency.size());
  for (int64_t round = 0; round < o.rounds; ++round) {  // levels alternate round by round
    for (size_t i = 0; i < o.concurrency.size(); ++i) {
      const bench::ThreadHandoff handoff = bench::measure_thread_handoff();
      runs[i].push_back(run_level(*rt, tok.get(), o, o.concurrency[i]));
      runs[i].back().handoff = handoff;
    }
  }
  std::vector<EngineBenchRow> rows;
  for (size_t i = 0; i < o.concurrency.size(); ++i) {
    rows.push_back(summarize(o.concurrency[i], runs[i]));
  }
  return rows;
}

std::string format_engine_bench(const EngineBenchOptions& o,
                                const std::vector<EngineBenchRow>& rows) {
  std::string s = fmt::format(
      "engine bench: {} ({} linear weights, {} activations), prompt {} + output {} tokens, tp {}, "
      "reduction parts {}, prefix cache {}, temperature {}, top_p {}, warm-up {}\n\n",
      o.model_dir.empty() ? "preset " + o.preset : o.model_dir,
      !o.weights.empty()    ? o.weights
      : o.model_dir.empty() ? "fp32"
                            : "bf16 where exact",
      o.dtype, o.prompt_tokens, o.output_tokens, o.tensor_parallel, o.reduction_parts,
      o.prefix_cache ? "on" : "off", o.temperature, o.top_p,
      o.warmup < 0 ? std::string("one wave (concurrency requests)")
                   : fmt::format("{} requests", o.warmup));
  s.insert(s.size() - 1, fmt::format("machine: {}\n", bench::machine_description()));
  s += "| concurrency | requests | output tok/s | TTFT p50 / p90 / p99 ms | TPOT p50 / p90 / p99 "
       "ms | steps | tokens/step | step ms | host µs/step (schedule + sample + output) | host % "
       "| text µs/step off the loop |\n";
  s += "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const EngineBenchRow& r : rows)
    s += fmt::format(
        "| {} | {} | {:.1f} | {:.1f} / {:.1f} / {:.1f} | {:.2f} / {:.2f} / {:.2f} | {} | {:.1f} | "
        "{:.2f} | {:.0f} ({:.0f} + {:.0f} + {:.0f}) | {:.1f}% | {:.0f} |\n",
        r.concurrency, r.requests, r.output_tokens_per_second, r.ttft_ms[0], r.ttft_ms[1],
        r.ttft_ms[2], r.tpot_ms[0], r.tpot_ms[1], r.tpot_ms[2], r.steps, r.tokens_per_step,
        r.step_ms, r.host_us_per_step, r.schedule_us_per_step, r.sample_us_per_step,
        r.output_us_per_step, r.host_percent, r.deferred_output_us_per_step);
  s += "\nbefore each run, two threads' cache-line round trip / 1 MiB one wrote read by the other "
       "(bench/thread_handoff.hpp):";
  auto value = [](double v, const char* unit) {  // -1: not measured (thread_handoff.hpp)
    return v < 0 ? std::string("n/a") : fmt::format("{:.0f} {}", v, unit);
  };
  for (const EngineBenchRow& r : rows) {
    std::vector<std::string> each;
    for (size_t i = 0; i < r.round_trip_ns.size(); ++i) {
      each.push_back(value(r.round_trip_ns[i], "ns") + " / " + value(r.read_mib_us[i], "µs"));
    }
    s += fmt::format(" at {}: {};", r.concurrency, fmt::join(each, ", "));
  }
  s.back() = '\n';
  if (rows.size() >= 2 && rows.front().output_tokens_per_second > 0) {
    const EngineBenchRow &first = rows.front(), &last = rows.back();
    s += fmt::format("\nthroughput at concurrency {} = {:.1f}x that at {}", last.concurrency,
                     last.output_tokens_per_second / first.output_tokens_per_second,
                     first.concurrency);
    if (first.round_tokens_per_second.size() > 1) {  // the spread a drifting machine gives
      std::vector<std::string> each;
      for (size_t r = 0; r < first.round_tokens_per_second.size(); ++r) {
        each.push_back(fmt::format(
            "{:.1f}x", last.round_tokens_per_second[r] / first.round_tokens_per_second[r]));
      }
      s += fmt::format(" (over {} rounds; round by round {})", each.size(), fmt::join(each, ", "));
    }
    s += "\n";
  }
  return s;
}

}  // namespace tessera::engine
