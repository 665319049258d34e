// Live A/B: the running comparison of the arms of one server — what `/v1/ab/report` returns and
// the arm-labelled series added to /metrics. Each finished request is recorded with its arm;
// counters are kept for the server's lifetime, latency percentiles over each arm's most recent
// `window` requests (a ring buffer: bounded memory whatever the traffic).
//
// Thread-safe: record() from engine/frontend threads, report() and write_prometheus() from
// scrapes, concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/prometheus.hpp"

namespace tessera::ab {

struct LiveOutcome {
  std::string finish_reason;     // "stop" | "length" | "abort" | "error" | "repetition"
  bool repetition_stop = false;  // the repetition guard ended it
  bool repetition_hit = false;   // the guard saw a loop (warn mode: counted, not stopped)
  double ttft_s = 0;             // submit -> first token
  double latency_s = 0;          // submit -> finish
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
};

class LiveComparison {
 public:
  explicit LiveComparison(std::vector<std::string> arms, size_t window = 4096);

  void record(size_t arm, const LiveOutcome& outcome);

  // {"arms": {"a": {"requests", "share", "finish_reasons", "repetition_stops",
  //   "repetition_hits", "output_tokens", "tokens_per_s", "ttft_s": {count, mean, p50, p90, p99,
  //   max, min}, "latency_s": {...}}, ...}, "requests": N, "window": W}
  nlohmann::ordered_json report() const;

  // tessera_ab_requests_total, tessera_ab_finished_total{finish_reason},
  // tessera_ab_repetition_stops_total, tessera_ab_generation_tokens_total and the histograms
  // tessera_ab_time_to_first_token_seconds / tessera_ab_e2e_request_latency_seconds, every
  // sample labelled arm="<name>" after `labels`.
  void write_prometheus(PrometheusWriter& out, const Labels& labels) const;

  const std::vector<std::string>& arms() const { return names_; }

 private:
  struct ArmState {
    int64_t requests = 0, repetition_stops = 0, repetition_hits = 0;
    int64_t output_tokens = 0, prompt_tokens = 0;
    double decode_seconds = 0;  // latency - ttft, summed
    std::map<std::string, int64_t> finish_reasons;
    std::vector<double> ttft, latency;  // ring buffers of `window`
    size_t next = 0;
    Histogram ttft_hist, latency_hist;
    ArmState();
  };

  std::vector<std::string> names_;
  size_t window_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<ArmState>> state_;
};

}  // namespace tessera::ab
