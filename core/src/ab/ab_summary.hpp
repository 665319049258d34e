// Summaries derived from an AbReport: teacher-forced divergence (overall, per prompt, by
// position) and free-running outcomes (exact matches, first divergence, lengths, repetition
// guard, speed per arm).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ab/ab_report.hpp"
#include "comparison/distribution.hpp"

namespace tessera::ab {

struct TeacherForcedSummary {
  int64_t sequences = 0, positions = 0, generated_positions = 0;
  Distribution kl;              // every scored position
  Distribution kl_generated;    // positions predicting arm A's output (and what follows it)
  Distribution abs_dlogprob;    // positions with a known next token
  Distribution max_abs_dlogit;  // per position
  double top1_agreement = 0;    // fraction of positions whose argmax agrees
  int64_t top1_disagreements = 0;
};

// Over every sequence, or only those of one prompt.
TeacherForcedSummary summarize_teacher_forced(const AbReport& report,
                                              std::optional<size_t> prompt = std::nullopt);

// Per absolute position p (index = p): statistics over the sequences that reach p.
struct PositionCurves {
  std::vector<double> kl_mean, kl_max, top1_rate;
  std::vector<int64_t> count;
};
PositionCurves position_curves(const AbReport& report);

struct ArmFreeRunning {
  int64_t runs = 0;
  Distribution output_tokens, ttft_s, tokens_per_s;
  double aggregate_tokens_per_s = 0;  // all generated tokens / all decode time
  int64_t repetition_triggered = 0;   // runs where the guard saw a loop (any mode)
  int64_t repetition_stops = 0;       // runs it stopped (finish_reason "repetition")
  std::map<std::string, int64_t> finish_reasons;
};

struct FreeRunningSummary {
  int64_t pairs = 0, identical = 0;
  double exact_match_rate = 0;
  Distribution first_divergence;  // over the pairs that diverge
  ArmFreeRunning a, b;
  // agreement[t]: fraction of pairs whose outputs are still identical through output index t
  // (t = 0 .. longest output - 1).
  std::vector<double> agreement;
};

FreeRunningSummary summarize_free_running(const AbReport& report,
                                          std::optional<size_t> prompt = std::nullopt);

}  // namespace tessera::ab
