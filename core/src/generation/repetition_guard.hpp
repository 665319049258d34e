// RepetitionGuard: notices a generation stuck in a loop — the failure behind Tessera (DeepSeek-V4
// at temperature 0 emitting `</div>` for hundreds of tokens). After each token it asks whether
// the tail of the output is one n-gram (1 <= n <= max_ngram tokens) repeated back to back at
// least required_repeats(n) times, where
//   required_repeats(n) = max(min_repeats, ceil(min_span_tokens / n))
// so short n-grams need long runs ("the the the ..." x32) and long ones need fewer repeats of a
// long phrase. N-grams whose text is whitespace only (indentation, blank lines) never count.
// Precision and recall on the labelled corpus tests/data/repetition/cases.jsonl are measured by
// tests/unit/repetition_guard_test.cpp and stated in docs/generation.md.
//
// One instance per sequence; not thread-safe. O(max_ngram) work per token in the common case.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace tessera::generation {

struct RepetitionGuardOptions {
  int64_t min_repeats = 4;
  int64_t max_ngram = 32;
  int64_t min_span_tokens = 64;
  int64_t min_span_chars = 128;
};

struct RepetitionHit {
  int64_t ngram = 0;    // tokens in the repeating unit
  int64_t repeats = 0;  // back-to-back copies at the end of the output
};

class RepetitionGuard {
 public:
  // token_text(id): the bytes the token stands for (used for whitespace and span length).
  RepetitionGuard(RepetitionGuardOptions options,
                  std::function<std::string_view(int32_t)> token_text);

  // Adds one generated token; returns the loop found at the tail, if any.
  std::optional<RepetitionHit> push(int32_t token);
  const RepetitionGuardOptions& options() const { return options_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }

 private:
  int64_t repeats_at_tail(int64_t n) const;

  RepetitionGuardOptions options_;
  std::function<std::string_view(int32_t)> token_text_;
  std::vector<int32_t> tokens_;
};

}  // namespace tessera::generation
