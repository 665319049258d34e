#include "util/prometheus.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tessera {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  std::sort(bounds_.begin(), bounds_.end());
}

void Histogram::observe(double value) {
  const auto bucket = static_cast<std::size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  const std::lock_guard lock(mutex_);
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.bounds = bounds_;
  const std::lock_guard lock(mutex_);
  std::uint64_t running = 0;
  for (const auto c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.sum = sum_;
  s.count = count_;
  return s;
}

std::vector<double> buckets_1_2_5(double max_value) {
  std::vector<double> out;
  for (double exponent = 1;; exponent *= 10) {
    for (const double m : {1.0, 2.0, 5.0}) {
      const double v = m * exponent;
      if (v > max_value) return out;
      out.push_back(v);
    }
  }
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return fmt::format("{}", static_cast<long long>(value));
  }
  return fmt::format("{}", value);
}

namespace {

std::string label_text(const Labels& labels, std::string_view extra_name = {},
                       std::string_view extra_value = {}) {
  std::string out;
  const auto add = [&](std::string_view k, std::string_view v) {
    out += out.empty() ? "{" : ",";
    out += fmt::format("{}=\"{}\"", k, escape_label_value(v));
  };
  for (const auto& [k, v] : labels) add(k, v);
  if (!extra_name.empty()) add(extra_name, extra_value);
  if (!out.empty()) out += "}";
  return out;
}

}  // namespace

void PrometheusWriter::header(std::string_view name, std::string_view type, std::string_view help) {
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void PrometheusWriter::sample(std::string_view name, const Labels& labels, double value) {
  out_ += fmt::format("{}{} {}\n", name, label_text(labels), format_value(value));
}

void PrometheusWriter::histogram(std::string_view name, const Labels& labels,
                                 const Histogram::Snapshot& s) {
  for (std::size_t i = 0; i < s.bounds.size(); ++i) {
    out_ += fmt::format("{}_bucket{} {}\n", name,
                        label_text(labels, "le", format_value(s.bounds[i])), s.cumulative[i]);
  }
  out_ += fmt::format("{}_bucket{} {}\n", name, label_text(labels, "le", "+Inf"), s.count);
  out_ += fmt::format("{}_sum{} {}\n", name, label_text(labels), format_value(s.sum));
  out_ += fmt::format("{}_count{} {}\n", name, label_text(labels), s.count);
}

}  // namespace tessera
