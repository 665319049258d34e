#include "serve/serve_metrics.hpp"

#include <algorithm>

namespace tessera::serve {

namespace {

// vLLM's buckets (vllm/v1/metrics/loggers.py), so dashboards' quantiles line up.
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kE2eBuckets = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                         5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                         60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

constexpr const char* kFinishNames[] = {"stop", "length", "abort", "error", "repetition"};

}  // namespace

ServeMetrics::ServeMetrics(int64_t max_context)
    : ttft_(kTtftBuckets),
      itl_(kItlBuckets),
      e2e_(kE2eBuckets),
      queue_(kE2eBuckets),
      prefill_(kE2eBuckets),
      decode_(kE2eBuckets),
      inference_(kE2eBuckets),
      prompt_tokens_hist_(buckets_1_2_5(static_cast<double>(std::max<int64_t>(max_context, 1)))),
      generation_tokens_hist_(
          buckets_1_2_5(static_cast<double>(std::max<int64_t>(max_context, 1)))),
      max_tokens_hist_(buckets_1_2_5(static_cast<double>(std::max<int64_t>(max_context, 1)))),
      n_hist_({1, 2, 5, 10, 20}),
      reasoning_tokens_hist_(
          buckets_1_2_5(static_cast<double>(std::max<int64_t>(max_context, 1)))) {}

void ServeMetrics::request_finished(Finish finish, int64_t prompt_tokens, int64_t generation_tokens,
                                    double e2e_seconds, int64_t max_tokens, int64_t n) {
  finished_[static_cast<std::size_t>(finish)].fetch_add(1, std::memory_order_relaxed);
  prompt_tokens_.fetch_add(prompt_tokens, std::memory_order_relaxed);
  prompt_tokens_hist_.observe(static_cast<double>(prompt_tokens));
  generation_tokens_hist_.observe(static_cast<double>(generation_tokens));
  e2e_.observe(e2e_seconds);
  max_tokens_hist_.observe(static_cast<double>(max_tokens));
  n_hist_.observe(static_cast<double>(n));
}

void ServeMetrics::request_phases(double queue_seconds, std::optional<double> ttft_seconds,
                                  double e2e_seconds) {
  queue_seconds = std::max(0.0, queue_seconds);
  queue_.observe(queue_seconds);
  inference_.observe(std::max(0.0, e2e_seconds - queue_seconds));
  if (ttft_seconds) {
    prefill_.observe(std::max(0.0, *ttft_seconds - queue_seconds));
    decode_.observe(std::max(0.0, e2e_seconds - *ttft_seconds));
  }
}

std::string ServeMetrics::exposition(const std::string& model_name,
                                     const EngineSnapshot& engine) const {
  PrometheusWriter w;
  write_exposition(w, model_name, {ArmMetrics{"", this, engine}});
  return w.take();
}

void ServeMetrics::write_exposition(PrometheusWriter& w, const std::string& model_name,
                                    const std::vector<ArmMetrics>& arms) {
  const auto labels = [&](const ArmMetrics& a) {
    Labels l = {{"model_name", model_name}};
    if (!a.arm.empty()) {
      l.emplace_back("arm", a.arm);
    }
    return l;
  };
  // One series: its header, then a sample per arm.
  const auto series = [&](const char* name, const char* type, const char* help, auto value) {
    w.header(name, type, help);
    for (const ArmMetrics& a : arms) {
      w.sample(name, labels(a), value(a));
    }
  };
  const auto gauge = [&](const char* name, const char* help, auto value) {
    series(name, "gauge", help, value);
  };
  const auto counter = [&](const char* name, const char* help, auto value) {
    series(name, "counter", help, value);
  };
  const auto histogram = [&](const char* name, const char* help, Histogram ServeMetrics::*h) {
    w.header(name, "histogram", help);
    for (const ArmMetrics& a : arms) {
      w.histogram(name, labels(a), (a.metrics->*h).snapshot());
    }
  };
  const auto count = [](const std::atomic<int64_t>& v) {
    return static_cast<double>(v.load(std::memory_order_relaxed));
  };
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
        [](const ArmMetrics& a) { return static_cast<double>(a.engine.running); });
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
        [](const ArmMetrics& a) { return static_cast<double>(a.engine.waiting); });
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
        [](const ArmMetrics& a) { return a.engine.kv_cache_usage; });
  gauge("tessera:kv_cache_prefix_cached_perc",
        "KV-cache pages held only by the prefix cache (reclaimable; not in "
        "vllm:kv_cache_usage_perc). 1 means 100 percent.",
        [](const ArmMetrics& a) { return a.engine.kv_cache_cached; });
  counter("vllm:prefix_cache_queries_total",
          "Prefix cache queries, in terms of number of queried tokens.",
          [](const ArmMetrics& a) { return static_cast<double>(a.engine.prefix_cache_queries); });
  counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.",
          [](const ArmMetrics& a) { return static_cast<double>(a.engine.prefix_cache_hits); });
  counter("vllm:num_preemptions_total", "Cumulative number of preemptions from the engine.",
          [](const ArmMetrics& a) { return static_cast<double>(a.engine.preemptions); });
  counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.",
          [&](const ArmMetrics& a) { return count(a.metrics->prompt_tokens_); });
  counter("vllm:generation_tokens_total", "Number of generation tokens processed.",
          [&](const ArmMetrics& a) { return count(a.metrics->generation_tokens_); });

  w.header("vllm:request_success_total", "counter", "Count of successfully processed requests.");
  for (const ArmMetrics& a : arms) {
    for (std::size_t i = 0; i < a.metrics->finished_.size(); ++i) {
      Labels l = labels(a);
      l.emplace_back("finished_reason", kFinishNames[i]);
      w.sample("vllm:request_success_total", l, count(a.metrics->finished_[i]));
    }
  }
  histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
            &ServeMetrics::ttft_);
  histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
            &ServeMetrics::itl_);
  histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
            &ServeMetrics::e2e_);
  histogram("vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.", &ServeMetrics::queue_);
  histogram("vllm:request_inference_time_seconds",
            "Histogram of time spent in RUNNING phase for request.", &ServeMetrics::inference_);
  histogram("vllm:request_prefill_time_seconds",
            "Histogram of time spent in PREFILL phase for request.", &ServeMetrics::prefill_);
  histogram("vllm:request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.", &ServeMetrics::decode_);
  histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.",
            &ServeMetrics::prompt_tokens_hist_);
  histogram("vllm:request_generation_tokens", "Number of generation tokens processed.",
            &ServeMetrics::generation_tokens_hist_);
  histogram("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.",
            &ServeMetrics::max_tokens_hist_);
  histogram("vllm:request_params_n", "Histogram of the n request parameter.",
            &ServeMetrics::n_hist_);
  histogram("tessera:request_reasoning_tokens",
            "Histogram of the tokens each choice spent in its thinking segment.",
            &ServeMetrics::reasoning_tokens_hist_);

  counter("tessera:requests_started_total", "Choices submitted to the engine.",
          [&](const ArmMetrics& a) { return count(a.metrics->started_); });
  counter("tessera:requests_refused_total",
          "Requests refused before submission (invalid, too long, queue full, not ready).",
          [&](const ArmMetrics& a) { return count(a.metrics->refused_); });
  gauge("tessera:kv_bytes_per_entry", "Bytes of one cached latent entry in the configured format.",
        [](const ArmMetrics& a) { return static_cast<double>(a.engine.kv_bytes_per_entry); });
  gauge("tessera:kv_pages_total", "Cache pages on each rank.",
        [](const ArmMetrics& a) { return static_cast<double>(a.engine.kv_pages_total); });
  counter("tessera:engine_steps_total", "Engine steps run.",
          [](const ArmMetrics& a) { return static_cast<double>(a.engine.steps); });
  counter("tessera:degenerate_outputs_total",
          "Outputs the repetition guard found degenerate (an n-gram repeated back to back).",
          [](const ArmMetrics& a) { return static_cast<double>(a.engine.degenerate_outputs); });
  w.header("tessera:step_seconds_total", "counter",
           "Engine step time: the model forward and the host work around it.");
  for (const ArmMetrics& a : arms) {
    Labels forward = labels(a), host = labels(a);
    forward.emplace_back("part", "forward");
    host.emplace_back("part", "host");
    w.sample("tessera:step_seconds_total", forward, a.engine.forward_seconds);
    w.sample("tessera:step_seconds_total", host, a.engine.host_seconds);
  }
  w.header("tessera:plugin_seconds_total", "counter", "Time spent inside each plugin.");
  for (const ArmMetrics& a : arms) {
    for (const auto& [plugin, seconds] : a.engine.plugin_seconds) {
      Labels l = labels(a);
      l.emplace_back("plugin", plugin);
      w.sample("tessera:plugin_seconds_total", l, seconds);
    }
  }
}

}  // namespace tessera::serve
