#include "tokenizer/tokenizer.hpp"

#include <fstream>
#include <sstream>
#include <unordered_map>

#include "tokenizer/byte_level.hpp"
#include "tokenizer/tokenizer_json.hpp"
#include "tokenizer/utf8.hpp"
#include "util/check.hpp"

namespace tessera::tokenizer {

struct Tokenizer::Impl {
  TokenizerParts parts;
  AddedTokenSplitter splitter;
  // Indexed by id; `known` is false for holes in the id space.
  // What detokenizing reads (bytes and the flags) first, together in 35 bytes: the engine reads
  // one entry per sequence per step, cold in the cache after the forward.
  struct TokenEntry {
    std::string bytes;  // ByteLevel-decoded
    bool known = false;
    bool added = false;
    bool special = false;
    std::string text;  // as written in tokenizer.json
  };
  std::vector<TokenEntry> tokens;
  std::unordered_map<std::string, int32_t> added_by_content;

  explicit Impl(TokenizerParts p) : parts(std::move(p)), splitter(parts.added_tokens) {
    int32_t max_id = -1;
    for (const auto& [text, id] : parts.model.vocab()) {
      max_id = std::max(max_id, id);
    }
    for (const AddedToken& t : parts.added_tokens) {
      max_id = std::max(max_id, t.id);
    }
    tokens.resize(static_cast<std::size_t>(max_id) + 1);
    for (const auto& [text, id] : parts.model.vocab()) {
      tokens[id].text = text;
      tokens[id].known = true;
    }
    for (TokenEntry& entry : tokens) {
      if (entry.known) {
        entry.bytes = byte_level_to_bytes(entry.text);
      }
    }
    // An added token owns its id for decoding even when the model has another string there, and
    // HF emits its content as is, without the ByteLevel decoder.
    for (const AddedToken& t : parts.added_tokens) {
      TokenEntry& entry = tokens[t.id];
      entry.text = t.content;
      entry.bytes = t.content;
      entry.known = true;
      entry.added = true;
      entry.special = t.special;
      added_by_content[t.content] = t.id;
    }
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Tokenizer Tokenizer::from_json(std::string_view json_text, std::string_view origin) {
  return Tokenizer(std::make_unique<Impl>(parse_tokenizer_json(json_text, origin)));
}

Tokenizer Tokenizer::from_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  TS_CHECK(in.good(), "cannot open tokenizer file {}", path.string());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return from_json(buffer.str(), path.string());
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const std::size_t bad = find_invalid_utf8(text);
  TS_CHECK(bad == std::string_view::npos, "encode: input is not valid UTF-8 (byte {} of {})", bad,
           text.size());
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<TextSegment> segments;
  impl_->splitter.split(text, segments);
  std::vector<PreTokenizedWord> words;
  for (const TextSegment& segment : segments) {
    if (segment.token_id >= 0) {
      ids.push_back(segment.token_id);
      continue;
    }
    words.clear();
    impl_->parts.pre_tokenizer.split(text.substr(segment.begin, segment.end - segment.begin),
                                     words);
    for (const PreTokenizedWord& word : words) {
      impl_->parts.model.encode_word(word, ids);
    }
  }
  if (add_special_tokens) {
    impl_->parts.post_processor.apply(ids);
  }
  return ids;
}

// HF TokenizerImpl::decode: runs of model tokens go through the ByteLevel decoder (bytes, then
// from_utf8_lossy) as one piece; an emitted added token ends the run and is appended verbatim; a
// skipped special token does not end the run.
std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string text, run;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= impl_->tokens.size()) {
      continue;
    }
    const Impl::TokenEntry& entry = impl_->tokens[id];
    if (!entry.known || (skip_special_tokens && entry.special)) {
      continue;
    }
    if (!entry.added) {
      run.append(entry.bytes);
      continue;
    }
    text.append(utf8_lossy(run));
    run.clear();
    text.append(entry.bytes);
  }
  text.append(utf8_lossy(run));
  return text;
}

std::string_view Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= impl_->tokens.size()) {
    return {};
  }
  return impl_->tokens[id].bytes;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto it = impl_->added_by_content.find(std::string(token));
      it != impl_->added_by_content.end()) {
    return it->second;
  }
  return impl_->parts.model.token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= impl_->tokens.size() || !impl_->tokens[id].known) {
    return std::nullopt;
  }
  return impl_->tokens[id].text;
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->tokens.size()); }

bool Tokenizer::is_added(int32_t id) const {
  return id >= 0 && static_cast<std::size_t>(id) < impl_->tokens.size() && impl_->tokens[id].added;
}

void Tokenizer::prefetch_token(int32_t id) const {
  if (id >= 0 && static_cast<std::size_t>(id) < impl_->tokens.size()) {
    const Impl::TokenEntry& e = impl_->tokens[id];
    __builtin_prefetch(&e.bytes);
    __builtin_prefetch(&e.special);
  }
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<std::size_t>(id) < impl_->tokens.size() &&
         impl_->tokens[id].special;
}

}  // namespace tessera::tokenizer
