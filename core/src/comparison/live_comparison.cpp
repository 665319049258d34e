#include "comparison/live_comparison.hpp"

#include <algorithm>

#include "comparison/distribution.hpp"
#include "util/check.hpp"

namespace tessera::ab {

namespace {

// vLLM's request-latency buckets (seconds), as serve_metrics uses for its own histograms.
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kLatencyBuckets = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                             5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                             60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

nlohmann::ordered_json to_json(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90},
          {"p99", d.p99},     {"max", d.max},   {"min", d.min}};
}

}  // namespace

LiveComparison::ArmState::ArmState() : ttft_hist(kTtftBuckets), latency_hist(kLatencyBuckets) {}

LiveComparison::LiveComparison(std::vector<std::string> arms, size_t window)
    : names_(std::move(arms)), window_(window) {
  TS_CHECK(!names_.empty(), "A/B: no arms to compare");
  TS_CHECK(window_ > 0, "A/B: the latency window must hold at least one request");
  for (size_t i = 0; i < names_.size(); ++i) state_.push_back(std::make_unique<ArmState>());
}

void LiveComparison::record(size_t arm, const LiveOutcome& o) {
  TS_CHECK(arm < names_.size(), "A/B: arm index {} of {}", arm, names_.size());
  std::lock_guard<std::mutex> lock(mutex_);
  ArmState& s = *state_[arm];
  ++s.requests;
  ++s.finish_reasons[o.finish_reason];
  s.repetition_stops += o.repetition_stop ? 1 : 0;
  s.repetition_hits += o.repetition_hit || o.repetition_stop ? 1 : 0;
  s.output_tokens += o.output_tokens;
  s.prompt_tokens += o.prompt_tokens;
  s.decode_seconds += std::max(0.0, o.latency_s - o.ttft_s);
  if (s.ttft.size() < window_) {
    s.ttft.push_back(o.ttft_s);
    s.latency.push_back(o.latency_s);
  } else {
    s.ttft[s.next] = o.ttft_s;
    s.latency[s.next] = o.latency_s;
    s.next = (s.next + 1) % window_;
  }
  s.ttft_hist.observe(o.ttft_s);
  s.latency_hist.observe(o.latency_s);
}

nlohmann::ordered_json LiveComparison::report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t total = 0;
  for (const auto& s : state_) total += s->requests;
  nlohmann::ordered_json arms = nlohmann::ordered_json::object();
  for (size_t i = 0; i < names_.size(); ++i) {
    const ArmState& s = *state_[i];
    nlohmann::ordered_json finish = nlohmann::ordered_json::object();
    for (const auto& [k, v] : s.finish_reasons) finish[k] = v;
    arms[names_[i]] = {
        {"requests", s.requests},
        {"share", total > 0 ? static_cast<double>(s.requests) / static_cast<double>(total) : 0.0},
        {"finish_reasons", finish},
        {"repetition_stops", s.repetition_stops},
        {"repetition_hits", s.repetition_hits},
        {"prompt_tokens", s.prompt_tokens},
        {"output_tokens", s.output_tokens},
        {"tokens_per_s",
         s.decode_seconds > 0 ? static_cast<double>(s.output_tokens) / s.decode_seconds : 0.0},
        {"ttft_s", to_json(summarize(s.ttft))},
        {"latency_s", to_json(summarize(s.latency))}};
  }
  return {{"requests", total}, {"window", window_}, {"arms", arms}};
}

void LiveComparison::write_prometheus(PrometheusWriter& out, const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto with_arm = [&](size_t i) {
    Labels l = labels;
    l.emplace_back("arm", names_[i]);
    return l;
  };
  out.header("tessera_ab_requests_total", "counter", "Finished requests per A/B arm.");
  for (size_t i = 0; i < names_.size(); ++i)
    out.sample("tessera_ab_requests_total", with_arm(i), static_cast<double>(state_[i]->requests));
  out.header("tessera_ab_finished_total", "counter", "Finished requests per A/B arm and reason.");
  for (size_t i = 0; i < names_.size(); ++i) {
    for (const auto& [reason, n] : state_[i]->finish_reasons) {
      Labels l = with_arm(i);
      l.emplace_back("finish_reason", reason);
      out.sample("tessera_ab_finished_total", l, static_cast<double>(n));
    }
  }
  out.header("tessera_ab_repetition_stops_total", "counter",
             "Requests the repetition guard stopped, per A/B arm.");
  for (size_t i = 0; i < names_.size(); ++i)
    out.sample("tessera_ab_repetition_stops_total", with_arm(i),
               static_cast<double>(state_[i]->repetition_stops));
  out.header("tessera_ab_generation_tokens_total", "counter", "Generated tokens per A/B arm.");
  for (size_t i = 0; i < names_.size(); ++i)
    out.sample("tessera_ab_generation_tokens_total", with_arm(i),
               static_cast<double>(state_[i]->output_tokens));
  out.header("tessera_ab_time_to_first_token_seconds", "histogram",
             "Time to first token per A/B arm.");
  for (size_t i = 0; i < names_.size(); ++i)
    out.histogram("tessera_ab_time_to_first_token_seconds", with_arm(i),
                  state_[i]->ttft_hist.snapshot());
  out.header("tessera_ab_e2e_request_latency_seconds", "histogram",
             "End-to-end request latency per A/B arm.");
  for (size_t i = 0; i < names_.size(); ++i)
    out.histogram("tessera_ab_e2e_request_latency_seconds", with_arm(i),
                  state_[i]->latency_hist.snapshot());
}

}  // namespace tessera::ab
