// The pre-tokenizer: cuts a text segment (between added tokens) into the words BPE sees, exactly
// as Hugging Face `tokenizers` does for a Sequence of Split steps followed by ByteLevel.
//
// Split{pattern, behavior, invert}: the pattern's matches (or, inverted, the text between them)
// are the delimiters; `behavior` says what becomes of them (HF SplitDelimiterBehavior):
//   Removed            delimiters dropped            "a-b" on "-" -> "a", "b"
//   Isolated           delimiters are own pieces      -> "a", "-", "b"
//   MergedWithPrevious delimiter joins the piece before -> "a-", "b"
//   MergedWithNext     delimiter joins the piece after  -> "a", "-b"
//   Contiguous         runs of delimiters or non-delimiters collapse into one piece
// Empty pieces are dropped. Each step applies to every piece the previous step produced.
// ByteLevel{add_prefix_space, use_regex} must come last: it prepends a space to every piece that
// does not start with one (when add_prefix_space), splits with the GPT-2 regex (when use_regex),
// and marks the words as byte-level, so BPE starts from the 256-symbol byte alphabet.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/unicode_regex.hpp"

namespace tessera::tokenizer {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// One word for BPE: a slice of the input, possibly with a space in front (ByteLevel's prefix).
struct PreTokenizedWord {
  std::string_view text;
  bool prefix_space = false;
};

class PreTokenizer {
 public:
  void add_split(UnicodeRegex pattern, SplitBehavior behavior, bool invert);
  void set_byte_level(bool add_prefix_space, bool use_regex);

  // Appends the words of `segment` (valid UTF-8) to `out`; the views point into `segment`.
  void split(std::string_view segment, std::vector<PreTokenizedWord>& out) const;

  // Whether words are byte strings to map through the byte-level alphabet (ByteLevel present).
  [[nodiscard]] bool byte_level() const { return byte_level_; }

 private:
  struct SplitStep {
    UnicodeRegex pattern;
    SplitBehavior behavior;
    bool invert;
  };
  static void apply(const SplitStep& step, std::string_view piece,
                    std::vector<std::pair<std::size_t, std::size_t>>& scratch,
                    std::vector<std::string_view>& out);

  std::vector<SplitStep> steps_;
  bool byte_level_ = false;
  bool add_prefix_space_ = false;
  std::vector<SplitStep> byte_level_regex_;  // GPT-2's pattern when use_regex (0 or 1 entries)
};

}  // namespace tessera::tokenizer
