#include "serve/plain_content.hpp"

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>

namespace tessera::serve {
namespace {

// Byte length of the UTF-8 character that starts text (1 for a stray byte).
std::size_t first_char_bytes(std::string_view text) {
  const auto lead = static_cast<unsigned char>(text.front());
  const std::size_t n = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  return std::min(n, text.size());
}

bool has_added(const std::vector<int32_t>& ids, const tokenizer::Tokenizer& tokenizer) {
  for (const int32_t id : ids) {
    if (tokenizer.is_added(id)) return true;
  }
  return false;
}

// Wraps each added-token text of `text` in the markers.
std::string mark(const std::string& text, const tokenizer::Tokenizer& tokenizer,
                 PlainMarkers& markers) {
  std::vector<int32_t> ids;
  try {
    ids = tokenizer.encode(text);
  } catch (const Error&) {
    return text;  // invalid UTF-8: the prompt's own encode refuses it later
  }
  std::set<std::string> found;
  for (const int32_t id : ids) {
    if (tokenizer.is_added(id)) found.emplace(tokenizer.token_bytes(id));
  }
  if (found.empty()) return text;
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    // The earliest, then longest, occurrence of any found token text from `at`.
    std::size_t best = std::string::npos;
    std::size_t best_len = 0;
    for (const std::string& token : found) {
      const std::size_t p = text.find(token, at);
      if (p < best || (p == best && token.size() > best_len)) {
        best = p;
        best_len = token.size();
      }
    }
    if (best == std::string::npos) break;
    out.append(text, at, best - at);
    out += markers.open;
    out.append(text, best, best_len);
    out += markers.close;
    ++markers.wrapped;
    at = best + best_len;
  }
  out.append(text, at, std::string::npos);
  return out;
}

void mark_content(chat::Json& message, const tokenizer::Tokenizer& tokenizer,
                  PlainMarkers& markers) {
  const auto content = message.find("content");
  if (content == message.end()) return;
  if (content->is_string()) {
    *content = mark(content->get<std::string>(), tokenizer, markers);
  } else if (content->is_array()) {
    for (chat::Json& part : *content) {
      if (!part.is_object()) continue;
      const auto text = part.find("text");
      if (text != part.end() && text->is_string()) {
        *text = mark(text->get<std::string>(), tokenizer, markers);
      }
    }
  }
}

}  // namespace

PlainMarkers make_plain_markers() {
  std::random_device random;
  char nonce[33];
  std::snprintf(nonce, sizeof nonce, "%08x%08x%08x%08x", random(), random(), random(), random());
  return PlainMarkers{std::string("TSPLAIN") + nonce + "OPEN",
                      std::string("TSPLAIN") + nonce + "SHUT", 0};
}

chat::Json mark_special_text_in_content(const chat::Json& request,
                                        const tokenizer::Tokenizer& tokenizer,
                                        PlainMarkers& markers) {
  chat::Json out = request;
  const auto messages = out.find("messages");
  if (messages == out.end() || !messages->is_array()) return out;
  for (chat::Json& message : *messages) {
    if (!message.is_object()) continue;
    const auto role = message.find("role");
    if (role == message.end() || !role->is_string()) continue;
    const auto& name = role->get_ref<const std::string&>();
    if (name == "user" || name == "tool") mark_content(message, tokenizer, markers);
  }
  return out;
}

std::vector<int32_t> encode_plain(std::string_view text, const tokenizer::Tokenizer& tokenizer) {
  std::vector<int32_t> out;
  while (!text.empty()) {
    const std::vector<int32_t> ids = tokenizer.encode(text);
    if (!has_added(ids, tokenizer)) {
      out.insert(out.end(), ids.begin(), ids.end());
      break;
    }
    const std::size_t head = first_char_bytes(text);
    const std::vector<int32_t> first = tokenizer.encode(text.substr(0, head));
    if (!has_added(first, tokenizer)) {
      out.insert(out.end(), first.begin(), first.end());
    }  // a one-character added token has no plain spelling: it is dropped
    text.remove_prefix(head);
  }
  return out;
}

std::vector<int32_t> encode_with_plain_spans(std::string_view text, const PlainMarkers& markers,
                                             const tokenizer::Tokenizer& tokenizer) {
  if (markers.wrapped == 0) return tokenizer.encode(text);
  std::vector<int32_t> out;
  int64_t spans = 0;
  std::size_t at = 0;
  for (;;) {
    const std::size_t open = text.find(markers.open, at);
    const std::size_t outside_end = open == std::string_view::npos ? text.size() : open;
    const std::vector<int32_t> outside = tokenizer.encode(text.substr(at, outside_end - at));
    out.insert(out.end(), outside.begin(), outside.end());
    if (open == std::string_view::npos) break;
    const std::size_t inside = open + markers.open.size();
    const std::size_t close = text.find(markers.close, inside);
    if (close == std::string_view::npos) break;
    const std::vector<int32_t> plain = encode_plain(text.substr(inside, close - inside), tokenizer);
    out.insert(out.end(), plain.begin(), plain.end());
    ++spans;
    at = close + markers.close.size();
  }
  if (spans != markers.wrapped) {
    throw chat::ChatEncodingError(
        "special-token text in user or tool content could not be kept as text");
  }
  return out;
}

}  // namespace tessera::serve
