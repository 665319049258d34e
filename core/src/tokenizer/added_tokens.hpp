// Added tokens (special or not) are cut out of the text before pre-tokenization, the way Hugging
// Face `tokenizers`' AddedVocabulary does:
//   1. tokens with normalized == false are searched in the raw text,
//   2. the remaining text is normalized (our normalizer is the identity) and tokens with
//      normalized == true are searched in each remaining part.
// Each search scans left to right and takes, at the leftmost position where some token starts,
// the longest token (Aho-Corasick "leftmost-longest", as HF). single_word, lstrip and rstrip
// behave as in HF: single_word refuses a match touching a letter or digit (Rust's
// char::is_alphanumeric), lstrip / rstrip swallow the white space (char::is_whitespace) before /
// after the token into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::tokenizer {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

// A piece of the input: an added token (token_id >= 0) or text for the pre-tokenizer (-1).
struct TextSegment {
  std::size_t begin = 0, end = 0;
  int32_t token_id = -1;
};

class AddedTokenSplitter {
 public:
  AddedTokenSplitter() = default;
  explicit AddedTokenSplitter(const std::vector<AddedToken>& tokens);

  // Splits `text` (valid UTF-8) into segments covering it in order.
  void split(std::string_view text, std::vector<TextSegment>& out) const;

 private:
  // A byte trie over the contents of one class of tokens (normalized or not).
  struct Trie {
    struct Node {
      std::vector<std::pair<uint8_t, int32_t>> children;  // sorted by byte
      int32_t token = -1;  // index into tokens_ when a token ends here
    };
    std::vector<Node> nodes{Node{}};
    void insert(std::string_view content, int32_t token_index);
    // Index of the longest token starting at text[pos], and its length; -1 when none.
    [[nodiscard]] std::pair<int32_t, std::size_t> longest_at(std::string_view text,
                                                             std::size_t pos) const;
    [[nodiscard]] bool empty() const { return nodes.front().children.empty(); }
  };

  void split_with(const Trie& trie, std::string_view text, std::size_t base,
                  std::vector<TextSegment>& out) const;

  std::vector<AddedToken> tokens_;
  Trie raw_trie_;         // normalized == false
  Trie normalized_trie_;  // normalized == true
};

}  // namespace tessera::tokenizer
