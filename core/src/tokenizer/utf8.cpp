#include "tokenizer/utf8.hpp"

namespace tessera::tokenizer {
namespace {

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

}  // namespace

Utf8Sequence next_utf8_sequence(std::string_view bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const std::size_t n = bytes.size();
  const uint8_t lead = p[0];
  if (lead < 0x80) {
    return {Utf8Sequence::Kind::kValid, 1};
  }

  // Table 3-7 of the Unicode standard (well-formed byte sequences): the length and the allowed
  // range of the second byte depend on the lead byte; later bytes are always 80..BF.
  std::size_t length = 0;
  uint8_t second_lo = 0x80, second_hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) {
      second_lo = 0xA0;  // no overlong 3-byte forms
    }
    if (lead == 0xED) {
      second_hi = 0x9F;  // no surrogates
    }
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) {
      second_lo = 0x90;  // no overlong 4-byte forms
    }
    if (lead == 0xF4) {
      second_hi = 0x8F;  // nothing above U+10FFFF
    }
  } else {
    return {Utf8Sequence::Kind::kInvalid, 1};  // 80..C1, F5..FF never start a sequence
  }
  for (std::size_t i = 1; i < length; ++i) {
    if (i >= n) {
      return {Utf8Sequence::Kind::kIncomplete, i};
    }
    const uint8_t b = p[i];
    const bool ok = i == 1 ? (b >= second_lo && b <= second_hi) : is_continuation(b);
    if (!ok) {
      return {Utf8Sequence::Kind::kInvalid, i};
    }
  }
  return {Utf8Sequence::Kind::kValid, length};
}

std::size_t find_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    // ASCII fast path.
    if (static_cast<uint8_t>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const Utf8Sequence seq = next_utf8_sequence(text.substr(i));
    if (seq.kind != Utf8Sequence::Kind::kValid) {
      return i;
    }
    i += seq.length;
  }
  return std::string_view::npos;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

char32_t decode_utf8_scalar(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  switch (s.size()) {
    case 1:
      return p[0];
    case 2:
      return (char32_t(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
    case 3:
      return (char32_t(p[0] & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    default:
      return (char32_t(p[0] & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) |
             (char32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
  }
}

std::size_t append_utf8_lossy_decided(std::string_view bytes, std::string& out) {
  std::size_t i = 0;
  while (i < bytes.size()) {
    if (static_cast<uint8_t>(bytes[i]) < 0x80) {
      out.push_back(bytes[i++]);
      continue;
    }
    const Utf8Sequence seq = next_utf8_sequence(bytes.substr(i));
    switch (seq.kind) {
      case Utf8Sequence::Kind::kValid:
        out.append(bytes.substr(i, seq.length));
        break;
      case Utf8Sequence::Kind::kInvalid:
        out.append(kReplacementCharacter);
        break;
      case Utf8Sequence::Kind::kIncomplete:
        return i;
    }
    i += seq.length;
  }
  return i;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  const std::size_t used = append_utf8_lossy_decided(bytes, out);
  if (used < bytes.size()) {
    out.append(kReplacementCharacter);  // truncated tail: one U+FFFD
  }
  return out;
}

}  // namespace tessera::tokenizer
