#include "ab/coupling_summary.hpp"

#include <algorithm>

namespace tessera::ab {

namespace {

const ScoredSequence* scored_output(const AbReport& report, const RunPair& pair) {
  for (const ScoredSequence& s : report.sequences) {
    if (s.prompt == pair.prompt && s.continuation == pair.a.tokens) return &s;
  }
  return nullptr;
}

// Output indices whose token both arms drew from the same context: up to the divergence, or
// every token of an identical pair and the stop decision after it.
size_t decisions_at_risk(const RunPair& pair) {
  if (!pair.identical) return static_cast<size_t>(pair.first_divergence) + 1;
  return pair.a.tokens.size() + (pair.a.finish_reason == "stop" ? 1 : 0);
}

}  // namespace

CouplingSummary summarize_coupling(const AbReport& report) {
  CouplingSummary s;
  double tv_sum = 0, bound_sum = 0;
  for (const RunPair& pair : report.runs) {
    const ScoredSequence* seq = scored_output(report, pair);
    if (seq == nullptr || seq->positions.empty()) continue;
    const size_t first_row = static_cast<size_t>(seq->prompt_tokens) - 1;
    const size_t n = std::min(decisions_at_risk(pair), seq->positions.size() - first_row);
    if (s.at_risk_by_index.size() < n) {
      s.at_risk_by_index.resize(n, 0);
      s.diverged_by_index.resize(n, 0);
      s.tv_by_index.resize(n, 0.0);
      s.bound_by_index.resize(n, 0.0);
    }
    for (size_t t = 0; t < n; ++t) {
      const double tv = seq->positions[first_row + t].tv;
      const double bound = 2 * tv / (1 + tv);
      const bool parted = !pair.identical && static_cast<int64_t>(t) == pair.first_divergence;
      ++s.at_risk;
      ++s.at_risk_by_index[t];
      s.diverged += parted ? 1 : 0;
      s.diverged_by_index[t] += parted ? 1 : 0;
      tv_sum += tv;
      bound_sum += bound;
      s.tv_by_index[t] += tv;
      s.bound_by_index[t] += bound;
    }
  }
  if (s.at_risk > 0) {
    const auto n = static_cast<double>(s.at_risk);
    s.observed_rate = static_cast<double>(s.diverged) / n;
    s.mean_tv = tv_sum / n;
    s.expected_rate_bound = bound_sum / n;
  }
  for (size_t t = 0; t < s.at_risk_by_index.size(); ++t) {
    const auto n = static_cast<double>(std::max<int64_t>(1, s.at_risk_by_index[t]));
    s.tv_by_index[t] /= n;
    s.bound_by_index[t] /= n;
  }
  return s;
}

}  // namespace tessera::ab
