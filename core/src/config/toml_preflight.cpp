#include "config/toml_preflight.hpp"

#include <string>

namespace tessera::config_detail {

namespace {

bool is_ascii(char c) { return static_cast<unsigned char>(c) < 0x80; }
bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; }

// Walks the text with TOML's lexical states: just enough to know whether a byte lies in a
// comment, a string of one of the four kinds, or plain syntax. Invalid TOML may confuse it; toml++
// reports that input anyway, and every judgement made here holds for valid TOML.
class Scanner {
 public:
  Scanner(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  std::optional<ConfigDiagnostic> run() {
    if (starts_with("\xef\xbb\xbf")) {
      pos_ = 3;  // a UTF-8 byte order mark, which toml++ skips
    }
    // The last byte of syntax that was not a space: a quote opens a string only where TOML lets a
    // key or value begin (toml++ reads `0'x` as one bad number, not as 0 and a string).
    char previous = '\n';
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      const bool string_may_start =
          std::string_view("\n=[,{.").find(previous) != std::string_view::npos;
      if (c != ' ' && c != '\t' && c != '\r') {
        previous = c;
      }
      if (c == '#') {
        skip_until_newline();
      } else if (string_may_start && starts_with("\"\"\"")) {
        advance(3);
        if (auto problem = multi_line_basic()) {
          return problem;
        }
      } else if (string_may_start && starts_with("'''")) {
        advance(3);
        skip_past_closing('\'');
      } else if (string_may_start && (c == '"' || c == '\'')) {
        advance(1);
        single_line_string(c);
      } else if (!is_ascii(c)) {
        return problem(
            "non-ASCII character outside a string or comment (TOML allows them only "
            "inside quotes)");
      } else {
        advance(1);
      }
    }
    return std::nullopt;
  }

 private:
  bool starts_with(std::string_view s) const { return text_.substr(pos_).starts_with(s); }

  // Positions count code points, as toml++ does.
  void advance(std::size_t n) {
    for (std::size_t i = 0; i < n && pos_ < text_.size(); ++i, ++pos_) {
      if (text_[pos_] == '\n') {
        ++line_;
        column_ = 1;
      } else if (!is_continuation(text_[pos_])) {
        ++column_;
      }
    }
  }

  void skip_until_newline() {
    while (pos_ < text_.size() && text_[pos_] != '\n') {
      advance(1);
    }
  }

  // Basic ("...", with escapes) or literal ('...'); a newline ends either (an error toml++ names).
  void single_line_string(char quote) {
    while (pos_ < text_.size() && text_[pos_] != '\n') {
      const char c = text_[pos_];
      advance(c == '\\' && quote == '"' ? 2 : 1);
      if (c == quote) {
        return;
      }
    }
  }

  // The closing delimiter is the last three of a run of up to five quotes ("""a""""" holds a"").
  void skip_past_closing(char quote) {
    const std::string delimiter(3, quote);
    while (pos_ < text_.size()) {
      if (starts_with(delimiter)) {
        std::size_t run = 0;
        while (run < 5 && pos_ + run < text_.size() && text_[pos_ + run] == quote) {
          ++run;
        }
        advance(run);
        return;
      }
      advance(text_[pos_] == '\\' && quote == '"' ? 2 : 1);
    }
  }

  std::optional<ConfigDiagnostic> multi_line_basic() {
    while (pos_ < text_.size()) {
      if (starts_with("\"\"\"")) {
        skip_past_closing('"');
        return std::nullopt;
      }
      if (text_[pos_] != '\\') {
        advance(1);
        continue;
      }
      // A line-ending backslash: whitespace up to a newline, then every whitespace and newline
      // after it is trimmed, and toml++ classifies the first character that is not.
      std::size_t look = pos_ + 1;
      while (look < text_.size() && (text_[look] == ' ' || text_[look] == '\t')) {
        ++look;
      }
      if (look < text_.size() && (text_[look] == '\n' || text_[look] == '\r')) {
        advance(look - pos_);
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                       text_[pos_] == '\n' || text_[pos_] == '\r')) {
          advance(1);
        }
        if (pos_ < text_.size() && !is_ascii(text_[pos_])) {
          return problem(
              "non-ASCII character right after a line-ending backslash: toml++ 3.3 "
              "cannot parse it safely (toml++ issue #190); write it as \\uXXXX");
        }
      } else if (look < text_.size() && !is_ascii(text_[look])) {
        // Not a valid escape (directly, or after spaces and tabs that did not reach a newline);
        // toml++ asks whether the character is whitespace before saying so, and that check is
        // the undefined behaviour of toml++ issue #190.
        advance(1);
        return problem("non-ASCII character after a backslash is not an escape sequence");
      } else {
        advance(2);  // an ordinary escape
      }
    }
    return std::nullopt;
  }

  ConfigDiagnostic problem(const char* message) const {
    return ConfigDiagnostic{SourceLocation{std::string(name_), line_, column_}, message};
  }

  std::string_view text_;
  std::string_view name_;
  std::size_t pos_ = 0;
  std::int64_t line_ = 1;
  std::int64_t column_ = 1;
};

// Length of the well-formed UTF-8 sequence (Unicode 15, table 3-7) starting at text[i], or 0.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) {
    return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u;
  };
  const auto in = [](unsigned v, unsigned lo, unsigned hi) { return v >= lo && v <= hi; };
  const unsigned b0 = byte(0);
  const unsigned b1 = byte(1);
  if (in(b0, 0xc2, 0xdf)) {
    return in(b1, 0x80, 0xbf) ? 2 : 0;
  }
  if (in(b0, 0xe0, 0xef)) {
    const unsigned lo = b0 == 0xe0 ? 0xa0 : 0x80;
    const unsigned hi = b0 == 0xed ? 0x9f : 0xbf;  // no surrogates
    return in(b1, lo, hi) && in(byte(2), 0x80, 0xbf) ? 3 : 0;
  }
  if (in(b0, 0xf0, 0xf4)) {
    const unsigned lo = b0 == 0xf0 ? 0x90 : 0x80;
    const unsigned hi = b0 == 0xf4 ? 0x8f : 0xbf;
    return in(b1, lo, hi) && in(byte(2), 0x80, 0xbf) && in(byte(3), 0x80, 0xbf) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::optional<std::string> ascii_shadow(std::string_view text) {
  std::size_t i = text.starts_with("\xef\xbb\xbf") ? 3 : 0;
  std::string shadow(text.substr(0, i));
  bool changed = false;
  while (i < text.size()) {
    const std::size_t n = is_ascii(text[i]) ? 0 : utf8_sequence_length(text, i);
    if (n == 0) {
      shadow.push_back(text[i++]);
    } else {
      shadow.push_back('x');
      i += n;
      changed = true;
    }
  }
  if (!changed) {
    return std::nullopt;
  }
  return shadow;
}

std::optional<ConfigDiagnostic> find_text_unsafe_for_tomlpp(std::string_view text,
                                                            std::string_view name) {
  return Scanner(text, name).run();
}

}  // namespace tessera::config_detail
