// A compiled Unicode regular expression for the pre-tokenizer's Split steps.
//
// Hugging Face `tokenizers` compiles Split patterns with Oniguruma (Ruby syntax, UTF-8). We run
// them with PCRE2 in UTF + UCP mode, which has the same \p{..} categories, lookahead and (?i:..)
// groups. Two documented adjustments make PCRE2 agree with Oniguruma:
//   - \s / \S become \p{White_Space} / \P{White_Space}: PCRE2's UCP \s also matches U+180E, which
//     Unicode (and Oniguruma) no longer count as white space;
//   - \p{X} / \P{X} of a general category also cover the characters Unicode 15.0-16.0 added to
//     it (Oniguruma has Unicode 16 tables, Debian 12's PCRE2 Unicode 14; unicode_supplement.hpp);
//   - ^ and $ are line anchors (Ruby semantics), so the pattern is compiled MULTILINE with LF
//     newlines.
// Iteration follows the onig crate's find_iter: an empty match that ends where the previous match
// ended is skipped and the search moves on by one character.
// A compiled pattern is immutable; matching from several threads at once is safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::tokenizer {

class UnicodeRegex {
 public:
  // Throws tessera::Error naming the offset and PCRE2's reason when the pattern does not compile.
  explicit UnicodeRegex(std::string_view oniguruma_pattern);
  ~UnicodeRegex();
  UnicodeRegex(UnicodeRegex&&) noexcept;
  UnicodeRegex& operator=(UnicodeRegex&&) noexcept;
  UnicodeRegex(const UnicodeRegex&) = delete;
  UnicodeRegex& operator=(const UnicodeRegex&) = delete;

  // Appends the [begin, end) byte ranges of the non-overlapping matches in `text`, in order.
  // `text` must be valid UTF-8 (not checked again here). Throws tessera::Error when PCRE2 gives up
  // (match or heap limit), which only pathological patterns reach.
  void find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& out) const;

  // True when the pattern matches at exactly `offset` (an anchored match).
  [[nodiscard]] bool matches_at(std::string_view text, std::size_t offset) const;

  // A pattern that matches `literal` exactly (Split's {"String": ...} form).
  [[nodiscard]] static std::string escape(std::string_view literal);

  [[nodiscard]] const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  std::string pattern_;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace tessera::tokenizer
