// Characters whose Unicode general category differs between Unicode 14.0 (the tables of Debian
// 12's PCRE2) and Unicode 16.0 (the tables of Oniguruma in Hugging Face `tokenizers` 0.23), per
// two-letter category. The regex translation (unicode_regex.cpp) adds them to \p{X} so both
// engines agree. Generated table: tools/tokenizer/gen_unicode_supplement.py.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::tokenizer {

struct CategorySupplement {
  std::string_view category;                          // two letters, e.g. "Lo"
  std::vector<std::pair<char32_t, char32_t>> ranges;  // inclusive code point ranges
};

[[nodiscard]] const std::vector<CategorySupplement>& unicode16_supplement();

// PCRE2 class items ("\x{1C89}-\x{1C8A}...") for a property name: a two-letter category, or a
// one-letter one (L = Lu Ll Lt Lm Lo, ...). Empty when nothing changed or the name is not a
// general category.
[[nodiscard]] std::string unicode16_class_items(std::string_view property);

}  // namespace tessera::tokenizer
