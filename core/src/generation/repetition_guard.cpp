#include "generation/repetition_guard.hpp"

#include <algorithm>
#include <utility>

namespace tessera::generation {

RepetitionGuard::RepetitionGuard(RepetitionGuardOptions options,
                                 std::function<std::string_view(int32_t)> token_text)
    : options_(options), token_text_(std::move(token_text)) {}

// How many copies of the last n tokens sit back to back at the end of the output.
int64_t RepetitionGuard::repeats_at_tail(int64_t n) const {
  const auto size = static_cast<int64_t>(tokens_.size());
  int64_t copies = 1;
  for (int64_t start = size - 2 * n; start >= 0; start -= n) {
    if (!std::equal(tokens_.begin() + start, tokens_.begin() + start + n, tokens_.end() - n)) break;
    ++copies;
  }
  return copies;
}

std::optional<RepetitionHit> RepetitionGuard::push(int32_t token) {
  tokens_.push_back(token);
  const auto size = static_cast<int64_t>(tokens_.size());
  const int64_t min_repeats = std::max<int64_t>(2, options_.min_repeats);
  for (int64_t n = 1; n <= options_.max_ngram && min_repeats * n <= size; ++n) {
    // Two copies of the last n-gram need the last token to equal the one n before it: one
    // compare rejects almost every n (size >= 2n here) before the block comparison's call.
    if (tokens_[size - 1] != tokens_[size - 1 - n]) continue;
    const int64_t copies = repeats_at_tail(n);
    if (copies < min_repeats) continue;
    int64_t chars = 0;
    bool whitespace_only = true;
    for (auto it = tokens_.end() - n; it != tokens_.end(); ++it) {
      const std::string_view text = token_text_(*it);
      chars += static_cast<int64_t>(text.size());
      whitespace_only = whitespace_only && std::all_of(text.begin(), text.end(), [](char c) {
                          return c == ' ' || c == '\t' || c == '\n' || c == '\r';
                        });
    }
    if (whitespace_only) continue;
    if (copies * n >= options_.min_span_tokens || copies * chars >= options_.min_span_chars)
      return RepetitionHit{n, copies};
  }
  return std::nullopt;
}

}  // namespace tessera::generation
