#include "tokenizer/byte_level.hpp"

#include <array>

#include "tokenizer/utf8.hpp"

namespace tessera::tokenizer {
namespace {

constexpr bool maps_to_itself(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

constexpr std::array<char32_t, 256> make_byte_to_unicode() {
  std::array<char32_t, 256> table{};
  char32_t next_shifted = 0x100;
  for (unsigned b = 0; b < 256; ++b) {
    table[b] = maps_to_itself(b) ? b : next_shifted++;
  }
  return table;
}

constexpr std::array<char32_t, 256> kByteToUnicode = make_byte_to_unicode();
static_assert(kByteToUnicode[0x20] == 0x120 && kByteToUnicode[0x0A] == 0x10A);
static_assert(kByteToUnicode[0xAD] == 0x143);  // the 68th and last shifted byte

// Every character of the alphabet is below U+0144.
constexpr std::array<int16_t, 0x144> make_unicode_to_byte() {
  std::array<int16_t, 0x144> table{};
  for (auto& v : table) {
    v = -1;
  }
  for (unsigned b = 0; b < 256; ++b) {
    table[kByteToUnicode[b]] = static_cast<int16_t>(b);
  }
  return table;
}

constexpr std::array<int16_t, 0x144> kUnicodeToByte = make_unicode_to_byte();

struct Utf8Table {
  std::array<std::string, 256> text;
  Utf8Table() {
    for (unsigned b = 0; b < 256; ++b) {
      append_utf8(text[b], kByteToUnicode[b]);
    }
  }
};

const Utf8Table& utf8_table() {
  static const Utf8Table table;  // immutable after construction (thread-safe static init)
  return table;
}

}  // namespace

char32_t byte_to_unicode(uint8_t byte) { return kByteToUnicode[byte]; }

std::optional<uint8_t> unicode_to_byte(char32_t c) {
  if (c >= kUnicodeToByte.size() || kUnicodeToByte[c] < 0) {
    return std::nullopt;
  }
  return static_cast<uint8_t>(kUnicodeToByte[c]);
}

std::string_view byte_to_unicode_utf8(uint8_t byte) { return utf8_table().text[byte]; }

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    out.append(byte_to_unicode_utf8(static_cast<uint8_t>(c)));
  }
  return out;
}

std::string byte_level_to_bytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  std::size_t i = 0;
  while (i < token.size()) {
    const Utf8Sequence seq = next_utf8_sequence(token.substr(i));
    if (seq.kind != Utf8Sequence::Kind::kValid) {
      return std::string(token);
    }
    const auto byte = unicode_to_byte(decode_utf8_scalar(token.substr(i, seq.length)));
    if (!byte) {
      return std::string(token);
    }
    out.push_back(static_cast<char>(*byte));
    i += seq.length;
  }
  return out;
}

}  // namespace tessera::tokenizer
