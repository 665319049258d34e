// Minimal Prometheus text-format (0.0.4) building blocks for /metrics: a histogram with fixed
// buckets, and a writer that emits # HELP / # TYPE headers and correctly escaped label values.
// Histograms are thread-safe (a mutex each; observations are per token at most).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);  // ascending; +Inf is implicit
  void observe(double value);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<std::uint64_t> cumulative;  // per bound, then +Inf
    double sum = 0;
    std::uint64_t count = 0;
  };
  [[nodiscard]] Snapshot snapshot() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<std::uint64_t> counts_;  // per bucket (not cumulative), last is +Inf
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

// vLLM's bucket helper: 1, 2, 5, 10, 20, 50, ... up to max_value.
[[nodiscard]] std::vector<double> buckets_1_2_5(double max_value);

using Labels = std::vector<std::pair<std::string, std::string>>;

class PrometheusWriter {
 public:
  void header(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const Labels& labels, double value);
  void histogram(std::string_view name, const Labels& labels, const Histogram::Snapshot& s);
  [[nodiscard]] const std::string& text() const { return out_; }
  [[nodiscard]] std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

[[nodiscard]] std::string escape_label_value(std::string_view value);
[[nodiscard]] std::string format_value(double value);  // integers without ".0", +Inf/-Inf/NaN

}  // namespace tessera
