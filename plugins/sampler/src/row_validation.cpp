#include "row_validation.hpp"

#include <cmath>
#include <cstdio>

#include "penalties.hpp"

namespace tessera::sampler {
namespace {

std::string format_value(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

RowError invalid(std::string message) {
  return RowError{TS_ERR_INVALID_ARGUMENT, std::move(message)};
}

RowError check_params(const ts_sampling_params& p) {
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f) {
    return invalid("temperature = " + format_value(p.temperature) +
                   " (must be finite and >= 0; 0 means greedy)");
  }
  if (p.top_k < 0) {
    return invalid("top_k = " + std::to_string(p.top_k) + " (must be >= 0; 0 means off)");
  }
  // NaN fails both comparisons, so it is caught by the negated range test.
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return invalid("top_p = " + format_value(p.top_p) + " (must be in (0, 1]; 1 means off)");
  }
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) {
    return invalid("min_p = " + format_value(p.min_p) + " (must be in [0, 1]; 0 means off)");
  }
  if (!std::isfinite(p.repetition_penalty) || p.repetition_penalty <= 0.0f) {
    return invalid("repetition_penalty = " + format_value(p.repetition_penalty) +
                   " (must be finite and > 0; 1 means off)");
  }
  if (!(p.frequency_penalty >= -2.0f && p.frequency_penalty <= 2.0f)) {
    return invalid("frequency_penalty = " + format_value(p.frequency_penalty) +
                   " (must be in [-2, 2]; 0 means off)");
  }
  if (!(p.presence_penalty >= -2.0f && p.presence_penalty <= 2.0f)) {
    return invalid("presence_penalty = " + format_value(p.presence_penalty) +
                   " (must be in [-2, 2]; 0 means off)");
  }
  if (p.logprobs < 0) {
    return invalid("logprobs = " + std::to_string(p.logprobs) + " (must be 0 or 1)");
  }
  if (p.top_logprobs < 0) {
    return invalid("top_logprobs = " + std::to_string(p.top_logprobs) + " (must be >= 0)");
  }
  return {};
}

// The list's count and pointer; its ids too when `read` (a penalty will index by them).
RowError check_tokens(const char* what, const int32_t* tokens, int64_t n, int32_t vocab,
                      bool read) {
  if (n < 0) {
    return invalid(std::string("n_") + what + " = " + std::to_string(n) + " (must be >= 0)");
  }
  if (n > 0 && tokens == nullptr) {
    return invalid(std::string(what) + " is NULL with n_" + what + " = " + std::to_string(n));
  }
  if (!read) {
    return {};
  }
  // One branch-free pass (vectorised; an id is out of range iff it is >= vocab as unsigned), the
  // message only when something is wrong.
  uint32_t any_outside = 0;
  for (int64_t i = 0; i < n; ++i) {
    any_outside |=
        static_cast<uint32_t>(static_cast<uint32_t>(tokens[i]) >= static_cast<uint32_t>(vocab));
  }
  for (int64_t i = 0; any_outside != 0 && i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      return invalid(std::string(what) + "[" + std::to_string(i) +
                     "] = " + std::to_string(tokens[i]) + " is outside the vocabulary [0, " +
                     std::to_string(vocab) + ")");
    }
  }
  return {};
}

}  // namespace

RowError validate_row_arguments(const ts_sampler_row& row, int32_t vocab,
                                const ts_sampler_result& result, const ts_row_scan* scan) {
  if (RowError e = check_params(row.params); e.failed()) {
    return e;
  }
  if (row.logits == nullptr) {  // ABI 1.5: a greedy row answered by its scan
    if (!ts_sampling_is_greedy(&row.params)) {
      return invalid(
          "logits is NULL, allowed only for a greedy row (temperature 0, no penalty, no "
          "logprobs)");
    }
    if (scan == nullptr) {
      return invalid(
          "logits is NULL and the row has no scan (call sample_scanned or "
          "sample_grouped)");
    }
    if (scan->argmax < -1 || scan->argmax >= vocab) {
      return invalid("logits is NULL and the scan's argmax " + std::to_string(scan->argmax) +
                     " is outside the vocabulary (" + std::to_string(vocab) + ")");
    }
  }
  // Every row of every step carries its whole context, and only the penalties read it: checking
  // each id of a 100k-token context would be a 400 KB pass per row per step for nothing.
  const bool read = penalties_active(row.params);
  if (RowError e =
          check_tokens("prompt_tokens", row.prompt_tokens, row.n_prompt_tokens, vocab, read);
      e.failed()) {
    return e;
  }
  if (RowError e =
          check_tokens("output_tokens", row.output_tokens, row.n_output_tokens, vocab, read);
      e.failed()) {
    return e;
  }
  const int32_t wanted = row.params.top_logprobs;
  if (wanted > result.top_capacity) {
    return invalid("top_logprobs = " + std::to_string(wanted) +
                   " exceeds the result's top_capacity = " + std::to_string(result.top_capacity));
  }
  if (wanted > 0 && (result.top_tokens == nullptr || result.top_logprobs == nullptr)) {
    return invalid("top_logprobs = " + std::to_string(wanted) +
                   " but the result's top_tokens or top_logprobs array is NULL");
  }
  return {};
}

RowError validate_row_logits(const float* logits, int32_t vocab) {
  for (int32_t i = 0; i < vocab; ++i) {
    if (!std::isfinite(logits[i])) {
      return RowError{TS_ERR_NUMERIC, "logits[" + std::to_string(i) + "] = " +
                                          format_value(logits[i]) + " (logits must be finite)"};
    }
  }
  return {};
}

}  // namespace tessera::sampler
