// UTF-8 helpers shared by the tokenizer, the detokenizers and the chat parser.
//
// Lossy decoding follows Rust's String::from_utf8_lossy, which Hugging Face `tokenizers` uses in
// its ByteLevel decoder: every "maximal subpart of an ill-formed subsequence" becomes one U+FFFD
// (Unicode 15, §3.9 "U+FFFD Substitution of Maximal Subparts"; the same as the WHATWG decoder).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::tokenizer {

inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

// What starts at some position of a byte string.
struct Utf8Sequence {
  enum class Kind {
    kValid,       // `length` bytes form one scalar value
    kInvalid,     // `length` bytes (>= 1) are a maximal ill-formed subpart: one U+FFFD
    kIncomplete,  // the input ends inside a sequence that is valid so far (`length` bytes)
  };
  Kind kind;
  std::size_t length;
};

// Classifies the sequence starting at bytes[0]; `bytes` must not be empty.
[[nodiscard]] Utf8Sequence next_utf8_sequence(std::string_view bytes);

// Byte offset of the first ill-formed or truncated sequence, or npos when `text` is valid UTF-8.
[[nodiscard]] std::size_t find_invalid_utf8(std::string_view text);

[[nodiscard]] inline bool is_valid_utf8(std::string_view text) {
  return find_invalid_utf8(text) == std::string_view::npos;
}

// Appends the UTF-8 encoding of a Unicode scalar value.
void append_utf8(std::string& out, char32_t code_point);

// Decodes the scalar value of a *valid* sequence of `length` bytes.
[[nodiscard]] char32_t decode_utf8_scalar(std::string_view sequence);

// from_utf8_lossy: valid sequences copied, each maximal ill-formed subpart (and a truncated tail)
// replaced by U+FFFD.
[[nodiscard]] std::string utf8_lossy(std::string_view bytes);

// The streaming form: appends the lossy decoding of every sequence of `bytes` that is already
// decided and returns how many bytes were consumed. A trailing sequence that is valid so far but
// incomplete is left unconsumed, because later bytes may complete it. Feeding the unconsumed tail
// again with more bytes appended, and finally calling utf8_lossy on what remains, reproduces
// utf8_lossy of the whole input exactly.
std::size_t append_utf8_lossy_decided(std::string_view bytes, std::string& out);

}  // namespace tessera::tokenizer
