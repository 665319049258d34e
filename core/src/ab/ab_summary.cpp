#include "ab/ab_summary.hpp"

#include <algorithm>

namespace tessera::ab {

TeacherForcedSummary summarize_teacher_forced(const AbReport& report,
                                              std::optional<size_t> prompt) {
  TeacherForcedSummary s;
  std::vector<double> kl, kl_gen, dlogprob, dlogit;
  for (const ScoredSequence& seq : report.sequences) {
    if (prompt && seq.prompt != *prompt) continue;
    ++s.sequences;
    for (size_t r = 0; r < seq.positions.size(); ++r) {
      const PositionDivergence& p = seq.positions[r];
      kl.push_back(p.kl);
      // Row prompt_tokens - 1 predicts the first output token.
      if (static_cast<int64_t>(r) + 1 >= seq.prompt_tokens) kl_gen.push_back(p.kl);
      if (p.abs_dlogprob >= 0) dlogprob.push_back(p.abs_dlogprob);
      dlogit.push_back(p.max_abs_dlogit);
      s.top1_disagreements += p.top1_agree ? 0 : 1;
    }
  }
  s.positions = static_cast<int64_t>(kl.size());
  s.generated_positions = static_cast<int64_t>(kl_gen.size());
  s.kl = summarize(kl);
  s.kl_generated = summarize(kl_gen);
  s.abs_dlogprob = summarize(dlogprob);
  s.max_abs_dlogit = summarize(dlogit);
  s.top1_agreement = s.positions > 0 ? 1.0 - static_cast<double>(s.top1_disagreements) /
                                                 static_cast<double>(s.positions)
                                     : 1.0;
  return s;
}

PositionCurves position_curves(const AbReport& report) {
  PositionCurves c;
  size_t longest = 0;
  for (const ScoredSequence& seq : report.sequences)
    longest = std::max(longest, seq.positions.size());
  c.kl_mean.assign(longest, 0);
  c.kl_max.assign(longest, 0);
  c.top1_rate.assign(longest, 0);
  c.count.assign(longest, 0);
  for (const ScoredSequence& seq : report.sequences) {
    for (size_t p = 0; p < seq.positions.size(); ++p) {
      c.kl_mean[p] += seq.positions[p].kl;
      c.kl_max[p] = std::max(c.kl_max[p], seq.positions[p].kl);
      c.top1_rate[p] += seq.positions[p].top1_agree ? 1 : 0;
      ++c.count[p];
    }
  }
  for (size_t p = 0; p < longest; ++p) {
    c.kl_mean[p] /= static_cast<double>(c.count[p]);
    c.top1_rate[p] /= static_cast<double>(c.count[p]);
  }
  return c;
}

namespace {

ArmFreeRunning summarize_arm(const std::vector<const ArmRun*>& runs) {
  ArmFreeRunning s;
  s.runs = static_cast<int64_t>(runs.size());
  std::vector<double> lengths, ttft, speed;
  double tokens = 0, seconds = 0;
  for (const ArmRun* r : runs) {
    lengths.push_back(static_cast<double>(r->tokens.size()));
    ttft.push_back(r->ttft_s);
    if (!r->tokens.empty()) speed.push_back(r->tokens_per_s());
    tokens += static_cast<double>(r->tokens.size());
    seconds += r->decode_s;
    s.repetition_triggered += r->repetition_hits > 0 ? 1 : 0;
    s.repetition_stops += r->finish_reason == "repetition" ? 1 : 0;
    ++s.finish_reasons[r->finish_reason];
  }
  s.output_tokens = summarize(lengths);
  s.ttft_s = summarize(ttft);
  s.tokens_per_s = summarize(speed);
  s.aggregate_tokens_per_s = seconds > 0 ? tokens / seconds : 0;
  return s;
}

}  // namespace

FreeRunningSummary summarize_free_running(const AbReport& report, std::optional<size_t> prompt) {
  FreeRunningSummary s;
  std::vector<const ArmRun*> a, b;
  std::vector<double> divergence;
  size_t longest = 0;
  for (const RunPair& pair : report.runs) {
    if (prompt && pair.prompt != *prompt) continue;
    ++s.pairs;
    a.push_back(&pair.a);
    b.push_back(&pair.b);
    longest = std::max({longest, pair.a.tokens.size(), pair.b.tokens.size()});
    if (pair.identical) {
      ++s.identical;
    } else if (pair.first_divergence >= 0) {
      divergence.push_back(static_cast<double>(pair.first_divergence));
    }
  }
  s.exact_match_rate =
      s.pairs > 0 ? static_cast<double>(s.identical) / static_cast<double>(s.pairs) : 1.0;
  s.first_divergence = summarize(divergence);
  s.a = summarize_arm(a);
  s.b = summarize_arm(b);
  s.agreement.assign(longest, 0);
  for (size_t t = 0; t < longest; ++t) {
    int64_t still = s.identical;
    for (double d : divergence) still += d > static_cast<double>(t) ? 1 : 0;
    s.agreement[t] = s.pairs > 0 ? static_cast<double>(still) / static_cast<double>(s.pairs) : 1;
  }
  return s;
}

}  // namespace tessera::ab
