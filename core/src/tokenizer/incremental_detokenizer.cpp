#include "tokenizer/incremental_detokenizer.hpp"

#include "tokenizer/utf8.hpp"

namespace tessera::tokenizer {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

void IncrementalDetokenizer::push_into(int32_t id, std::string& out) {
  if (skip_special_tokens_ && tokenizer_.is_special(id)) {
    return;  // does not end the run
  }
  const std::string_view bytes = tokenizer_.token_bytes(id);
  if (tokenizer_.is_added(id)) {
    out.append(finish());
    out.append(bytes);
    return;
  }
  if (bytes.empty()) {
    return;  // an id that names no token
  }
  pending_.append(bytes);
  const std::size_t used = append_utf8_lossy_decided(pending_, out);
  pending_.erase(0, used);
}

std::string IncrementalDetokenizer::push(int32_t id) {
  std::string out;
  push_into(id, out);
  return out;
}

std::string IncrementalDetokenizer::push(std::span<const int32_t> ids) {
  std::string out;
  for (int32_t id : ids) {
    push_into(id, out);
  }
  return out;
}

std::string IncrementalDetokenizer::finish() {
  std::string out = pending_.empty() ? std::string() : utf8_lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace tessera::tokenizer
