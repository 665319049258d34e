#include "tokenizer/added_tokens.hpp"

#include <algorithm>

#include "tokenizer/unicode_regex.hpp"
#include "tokenizer/utf8.hpp"

namespace tessera::tokenizer {
namespace {

// Rust's char::is_whitespace: the Unicode White_Space property (a fixed list).
bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// Start of the character that ends at `end` (end > 0, text valid UTF-8).
std::size_t previous_char_start(std::string_view text, std::size_t end) {
  std::size_t i = end - 1;
  while (i > 0 && (static_cast<uint8_t>(text[i]) & 0xC0) == 0x80) {
    --i;
  }
  return i;
}

char32_t char_at(std::string_view text, std::size_t pos, std::size_t* length = nullptr) {
  const Utf8Sequence seq = next_utf8_sequence(text.substr(pos));
  if (length) {
    *length = seq.length;
  }
  return decode_utf8_scalar(text.substr(pos, seq.length));
}

// Rust's char::is_alphanumeric: Alphabetic or a numeric general category (Nd, Nl, No).
bool alphanumeric_at(std::string_view text, std::size_t pos) {
  static const UnicodeRegex kAlphanumeric(R"([\p{Alphabetic}\p{Nd}\p{Nl}\p{No}])");
  return kAlphanumeric.matches_at(text, pos);
}

// Index just after the last non-white-space character of text[0, end) (0 when none).
std::size_t white_space_run_start(std::string_view text, std::size_t end) {
  while (end > 0) {
    const std::size_t start = previous_char_start(text, end);
    if (!is_white_space(char_at(text, start))) {
      return end;
    }
    end = start;
  }
  return 0;
}

// Index just after the white space that starts at `pos`.
std::size_t white_space_run_end(std::string_view text, std::size_t pos) {
  while (pos < text.size()) {
    std::size_t length = 0;
    if (!is_white_space(char_at(text, pos, &length))) {
      break;
    }
    pos += length;
  }
  return pos;
}

}  // namespace

void AddedTokenSplitter::Trie::insert(std::string_view content, int32_t token_index) {
  int32_t node = 0;
  for (char ch : content) {
    const auto byte = static_cast<uint8_t>(ch);
    auto& children = nodes[node].children;
    auto it = std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t{-1}));
    if (it != children.end() && it->first == byte) {
      node = it->second;
      continue;
    }
    const auto child = static_cast<int32_t>(nodes.size());
    children.insert(it, {byte, child});
    nodes.emplace_back();
    node = child;
  }
  nodes[node].token = token_index;  // a later duplicate content wins, as in HF's map
}

std::pair<int32_t, std::size_t> AddedTokenSplitter::Trie::longest_at(std::string_view text,
                                                                     std::size_t pos) const {
  int32_t best = -1;
  std::size_t best_length = 0;
  int32_t node = 0;
  for (std::size_t i = pos; i < text.size(); ++i) {
    const auto byte = static_cast<uint8_t>(text[i]);
    const auto& children = nodes[node].children;
    auto it = std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t{-1}));
    if (it == children.end() || it->first != byte) {
      break;
    }
    node = it->second;
    if (nodes[node].token >= 0) {
      best = nodes[node].token;
      best_length = i + 1 - pos;
    }
  }
  return {best, best_length};
}

AddedTokenSplitter::AddedTokenSplitter(const std::vector<AddedToken>& tokens) : tokens_(tokens) {
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].content.empty()) {
      continue;  // HF never matches an empty token
    }
    (tokens_[i].normalized ? normalized_trie_ : raw_trie_)
        .insert(tokens_[i].content, static_cast<int32_t>(i));
  }
}

// HF AddedVocabulary::find_matches over text[base...] (offsets in `out` are absolute).
void AddedTokenSplitter::split_with(const Trie& trie, std::string_view text, std::size_t base,
                                    std::vector<TextSegment>& out) const {
  std::size_t start_offset = 0;  // end of what is already emitted
  std::size_t pos = 0;
  if (!trie.empty()) {
    while (pos < text.size()) {
      const auto [index, length] = trie.longest_at(text, pos);
      if (index < 0) {
        ++pos;  // tokens are valid UTF-8, so matches only ever start on a character boundary
        continue;
      }
      const AddedToken& token = tokens_[static_cast<std::size_t>(index)];
      std::size_t start = pos, stop = pos + length;
      pos = stop;  // the scan resumes after the match, whether it is kept or not
      if (token.single_word) {
        const bool space_before =
            start == 0 || !alphanumeric_at(text, previous_char_start(text, start));
        const bool space_after = stop == text.size() || !alphanumeric_at(text, stop);
        if (!space_before || !space_after) {
          continue;
        }
      }
      if (token.lstrip) {
        start = std::max(white_space_run_start(text, start), start_offset);
      }
      if (token.rstrip) {
        stop = white_space_run_end(text, stop);
        pos = stop;  // HF would resume inside the swallowed spaces; no real token starts there
      }
      if (start_offset < start) {
        out.push_back({base + start_offset, base + start, -1});
      }
      out.push_back({base + start, base + stop, token.id});
      start_offset = stop;
    }
  }
  if (start_offset < text.size()) {
    out.push_back({base + start_offset, base + text.size(), -1});
  }
}

void AddedTokenSplitter::split(std::string_view text, std::vector<TextSegment>& out) const {
  std::vector<TextSegment> first;
  split_with(raw_trie_, text, 0, first);
  for (const TextSegment& segment : first) {
    if (segment.token_id >= 0 || normalized_trie_.empty()) {
      out.push_back(segment);
      continue;
    }
    split_with(normalized_trie_, text.substr(segment.begin, segment.end - segment.begin),
               segment.begin, out);
  }
}

}  // namespace tessera::tokenizer
