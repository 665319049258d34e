#include "tokenizer/unicode_regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer/unicode_supplement.hpp"
#include "tokenizer/utf8.hpp"
#include "util/check.hpp"

namespace tessera::tokenizer {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  const int n = pcre2_get_error_message(code, buffer, sizeof(buffer));
  return n < 0 ? "unknown PCRE2 error " + std::to_string(code)
               : std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n));
}

// Rewrites the escapes whose meaning differs between Oniguruma and PCRE2 (see the header).
// Tracks whether we are inside a character class, because a class can take extra items inline
// while outside one a \p{X} has to become a class.
std::string translate_oniguruma(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 16);
  int class_depth = 0;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '[') {
      ++class_depth;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') {
        out.push_back(pattern[++i]);
      }
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') {
        out.push_back(pattern[++i]);
      }
      continue;
    }
    if (c == ']' && class_depth > 0) {
      --class_depth;
      out.push_back(c);
      continue;
    }
    if (c != '\\' || i + 1 == pattern.size()) {
      out.push_back(c);
      continue;
    }
    const char next = pattern[++i];
    if (next == 's') {
      out.append("\\p{White_Space}");
    } else if (next == 'S') {
      out.append("\\P{White_Space}");
    } else if (next == 'p' || next == 'P') {
      // \pL or \p{Lu}: the property name, then the Unicode 15-16 additions to it.
      std::string_view name;
      std::size_t last = i;
      if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
        const std::size_t close = pattern.find('}', i + 2);
        if (close != std::string_view::npos) {
          name = pattern.substr(i + 2, close - i - 2);
          last = close;
        }
      } else if (i + 1 < pattern.size()) {
        name = pattern.substr(i + 1, 1);
        last = i + 1;
      }
      const std::string property(pattern.substr(i - 1, last - i + 2));  // e.g. "\p{L}"
      const std::string extra = unicode16_class_items(name);
      if (extra.empty() || (class_depth > 0 && next == 'P')) {
        out.append(property);  // nothing new, or \P{X} inside a class: Unicode 14 tables
      } else if (class_depth > 0) {
        out.append(property).append(extra);
      } else {
        // \p{X} -> [\p{X}extra]; \P{X} -> [^\p{X}extra]
        out.append(next == 'p' ? "[" : "[^").append("\\p").append(property.substr(2)).append(extra);
        out.push_back(']');
      }
      i = last;
    } else {
      out.push_back('\\');
      out.push_back(next);
    }
  }
  return out;
}

}  // namespace

struct UnicodeRegex::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

UnicodeRegex::UnicodeRegex(std::string_view oniguruma_pattern)
    : pattern_(oniguruma_pattern), compiled_(std::make_unique<Compiled>()) {
  const std::string translated = translate_oniguruma(oniguruma_pattern);
  TS_CHECK(is_valid_utf8(oniguruma_pattern), "regex pattern is not valid UTF-8");
  pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(context, PCRE2_NEWLINE_LF);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  compiled_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error_code, &error_offset, context);
  pcre2_compile_context_free(context);
  TS_CHECK(compiled_->code != nullptr, "regex /{}/ does not compile at offset {}: {}", pattern_,
           error_offset, pcre2_message(error_code));
  // JIT makes matching several times faster; when unavailable the interpreter gives the same
  // results.
  compiled_->jit = pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE) == 0;
}

UnicodeRegex::~UnicodeRegex() = default;
UnicodeRegex::UnicodeRegex(UnicodeRegex&&) noexcept = default;
UnicodeRegex& UnicodeRegex::operator=(UnicodeRegex&&) noexcept = default;

namespace {

struct MatchData {
  pcre2_match_data* data;
  explicit MatchData(const pcre2_code* code)
      : data(pcre2_match_data_create_from_pattern(code, nullptr)) {
    TS_CHECK(data != nullptr, "out of memory for regex match data");
  }
  ~MatchData() { pcre2_match_data_free(data); }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
};

// One search from `start`; returns false when there is no match. Falls back to the interpreter
// when the JIT's machine stack is too small for this subject.
bool search(const pcre2_code* code, std::string_view text, std::size_t start, uint32_t options,
            MatchData& md, const std::string& pattern) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = pcre2_match(code, subject, text.size(), start, options | PCRE2_NO_UTF_CHECK, md.data,
                       nullptr);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
    rc = pcre2_match(code, subject, text.size(), start, options | PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                     md.data, nullptr);
  }
  if (rc == PCRE2_ERROR_NOMATCH) {
    return false;
  }
  TS_CHECK(rc >= 0, "regex /{}/ failed on a {}-byte input: {}", pattern, text.size(),
           pcre2_message(rc));
  return true;
}

}  // namespace

void UnicodeRegex::find_all(std::string_view text,
                            std::vector<std::pair<std::size_t, std::size_t>>& out) const {
  MatchData md(compiled_->code);
  std::size_t search_from = 0;
  bool have_previous = false;
  std::size_t previous_end = 0;
  while (search_from <= text.size()) {
    if (!search(compiled_->code, text, search_from, 0, md, pattern_)) {
      break;
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(md.data);
    const std::size_t begin = ovector[0], end = ovector[1];
    if (begin == end && have_previous && previous_end == end) {
      // Empty match right after the previous one: step over one character (onig's rule).
      if (search_from >= text.size()) {
        break;
      }
      const Utf8Sequence seq = next_utf8_sequence(text.substr(search_from));
      search_from += seq.length;
      continue;
    }
    out.emplace_back(begin, end);
    search_from = end;
    have_previous = true;
    previous_end = end;
  }
}

bool UnicodeRegex::matches_at(std::string_view text, std::size_t offset) const {
  MatchData md(compiled_->code);
  return search(compiled_->code, text, offset, PCRE2_ANCHORED, md, pattern_);
}

std::string UnicodeRegex::escape(std::string_view literal) {
  std::string out;
  out.reserve(literal.size() * 2);
  for (char c : literal) {
    const auto u = static_cast<unsigned char>(c);
    const bool alnum = (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z');
    if (u < 0x80 && !alnum) {
      out.push_back('\\');  // backslash + ASCII punctuation is a literal
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace tessera::tokenizer
