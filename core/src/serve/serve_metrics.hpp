// The numbers behind /metrics, under vLLM's metric names and types (so existing Grafana boards
// work) with a model_name label, plus tessera: metrics. Request-level series (latencies, token
// counts, finish reasons) are measured here, where every event passes; engine-level ones (running
// and waiting sequences, cache use, prefix cache, preemptions, plugin timings) come from the
// engine's snapshot at scrape time. docs/http.md lists every series.
//
// Thread-safe: observations come from engine threads, scrapes from frontend threads.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/prometheus.hpp"

namespace tessera::serve {

// The engine's state at one instant (zeros where an engine does not know).
struct EngineSnapshot {
  int64_t running = 0;
  int64_t waiting = 0;
  double kv_cache_usage = 0;         // fraction of cache pages in use by sequences, 0..1
  double kv_cache_cached = 0;        // fraction held only by the prefix cache (reclaimable)
  int64_t prefix_cache_queries = 0;  // prompt tokens looked up (counter)
  int64_t prefix_cache_hits = 0;     // of which found cached (counter)
  int64_t preemptions = 0;           // counter
  int64_t kv_bytes_per_entry = 0;
  int64_t kv_pages_total = 0;
  int64_t steps = 0;           // counter
  double forward_seconds = 0;  // model forward, all ranks as rank 0 sees it (counter)
  double host_seconds = 0;     // scheduling, sampling, stops, events (counter)
  std::map<std::string, double> plugin_seconds;  // plugin name -> time inside it (counter)
  int64_t degenerate_outputs = 0;                // repetition guard hits (counter)
};

enum class Finish { kStop, kLength, kAbort, kError, kRepetition, kCount };

class ServeMetrics;

// One arm of a live A/B server (docs/ab.md): its request-level metrics, its engine's snapshot
// and the `arm` label its samples carry ("" without A/B: no label).
struct ArmMetrics {
  std::string arm;
  const ServeMetrics* metrics = nullptr;
  EngineSnapshot engine;
};

class ServeMetrics {
 public:
  explicit ServeMetrics(int64_t max_context);

  void request_started() noexcept { started_.fetch_add(1, std::memory_order_relaxed); }
  void first_token(double seconds_since_submit) { ttft_.observe(seconds_since_submit); }
  void inter_token(double seconds) { itl_.observe(seconds); }
  void tokens_generated(int64_t n) noexcept {
    generation_tokens_.fetch_add(n, std::memory_order_relaxed);
  }
  // One choice finished.
  void request_finished(Finish finish, int64_t prompt_tokens, int64_t generation_tokens,
                        double e2e_seconds, int64_t max_tokens, int64_t n);
  // vLLM's phase histograms of one finished choice: queued (submit -> first scheduled), prefill
  // (first scheduled -> first token), decode (first token -> finish), inference (first scheduled
  // -> finish). ttft: submit -> first token, absent when no token came.
  void request_phases(double queue_seconds, std::optional<double> ttft_seconds, double e2e_seconds);
  // Tokens a choice spent thinking (tessera:request_reasoning_tokens histogram).
  void reasoning_finished(int64_t reasoning_tokens) {
    reasoning_tokens_hist_.observe(static_cast<double>(reasoning_tokens));
  }
  void request_refused() noexcept { refused_.fetch_add(1, std::memory_order_relaxed); }

  [[nodiscard]] std::string exposition(const std::string& model_name,
                                       const EngineSnapshot& engine) const;
  // Every series once (# HELP, # TYPE), with one sample set per arm, labelled arm="<name>".
  static void write_exposition(PrometheusWriter& w, const std::string& model_name,
                               const std::vector<ArmMetrics>& arms);

 private:
  Histogram ttft_;
  Histogram itl_;
  Histogram e2e_;
  Histogram queue_;
  Histogram prefill_;
  Histogram decode_;
  Histogram inference_;
  Histogram prompt_tokens_hist_;
  Histogram generation_tokens_hist_;
  Histogram max_tokens_hist_;
  Histogram n_hist_;
  Histogram reasoning_tokens_hist_;
  std::atomic<int64_t> prompt_tokens_{0};
  std::atomic<int64_t> generation_tokens_{0};
  std::atomic<int64_t> started_{0};
  std::atomic<int64_t> refused_{0};
  std::array<std::atomic<int64_t>, static_cast<std::size_t>(Finish::kCount)> finished_{};
};

}  // namespace tessera::serve
