// The byte-level alphabet of GPT-2-style BPE: a reversible map from the 256 byte values to 256
// printable Unicode characters, so that every byte string is a string of visible "characters"
// that BPE can merge (Radford et al. 2019, `bytes_to_unicode` in openai/gpt-2 src/encoder.py;
// Hugging Face `tokenizers` ByteLevel uses the same table).
//
// The formula: bytes '!'..'~' (0x21-0x7E), '¡'..'¬' (0xA1-0xAC) and '®'..'ÿ' (0xAE-0xFF) map to the
// code point of the same value; the remaining 68 bytes (controls, space, DEL, NBSP, soft hyphen),
// in increasing byte order, map to U+0100, U+0101, ... U+0143. So ' ' (0x20) becomes 'Ġ' (U+0120)
// and '\n' (0x0A) becomes 'Ċ' (U+010A).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::tokenizer {

[[nodiscard]] char32_t byte_to_unicode(uint8_t byte);

// The byte a character stands for, or nullopt when the character is not in the alphabet.
[[nodiscard]] std::optional<uint8_t> unicode_to_byte(char32_t c);

// UTF-8 text of byte_to_unicode(byte) (one or two bytes long).
[[nodiscard]] std::string_view byte_to_unicode_utf8(uint8_t byte);

// Maps every byte of `bytes` to its alphabet character; the result is UTF-8.
[[nodiscard]] std::string bytes_to_byte_level(std::string_view bytes);

// The inverse used by the ByteLevel decoder: when every character of `token` is in the alphabet,
// the bytes they stand for; otherwise (an added token such as "<｜User｜>") the token's own UTF-8
// bytes, unchanged.
[[nodiscard]] std::string byte_level_to_bytes(std::string_view token);

}  // namespace tessera::tokenizer
