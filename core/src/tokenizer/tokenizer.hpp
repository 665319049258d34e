// The text <-> token-id conversion of a Hugging Face `tokenizer.json` (byte-level BPE, as DeepSeek
// ships), producing the same ids and the same decoded text as HF `tokenizers`.
//
// encode: cut out added tokens (added_tokens.hpp) -> pre-tokenize each remaining segment
// (pre_tokenizer.hpp) -> BPE each word (bpe_model.hpp) -> optionally the post-processor template.
// decode: ids -> token strings -> bytes (byte_level.hpp) -> lossy UTF-8 (utf8.hpp), special tokens
// rendered as their text. For streaming use IncrementalDetokenizer.
//
// A Tokenizer is immutable after loading; every method may be called from many threads at once.
// Move-only (it owns large tables); share it by reference or shared_ptr.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::tokenizer {

class Tokenizer {
 public:
  // Throws tessera::Error naming the file and the offending field.
  [[nodiscard]] static Tokenizer from_file(const std::filesystem::path& path);
  [[nodiscard]] static Tokenizer from_json(std::string_view json_text,
                                           std::string_view origin = "tokenizer.json");

  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Ids of `text`, which must be valid UTF-8 (tessera::Error otherwise). Added / special tokens
  // written in the text (e.g. "<｜User｜>") become their ids. add_special_tokens applies the
  // post-processor template (e.g. a leading BOS) — note that HF's Python default is true, ours is
  // false because chat prompts already spell out their BOS.
  [[nodiscard]] std::vector<int32_t> encode(std::string_view text,
                                            bool add_special_tokens = false) const;

  // Text of `ids` as HF's decode(ids, skip_special_tokens): special tokens as their text unless
  // skipped, ill-formed UTF-8 replaced by U+FFFD, ids that name no token skipped (as HF does).
  [[nodiscard]] std::string decode(std::span<const int32_t> ids,
                                   bool skip_special_tokens = false) const;

  // The bytes one token stands for: ByteLevel-decoded for model tokens (possibly part of a UTF-8
  // character), the content for added tokens; empty for an id that names no token.
  [[nodiscard]] std::string_view token_bytes(int32_t id) const;

  [[nodiscard]] std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token's string as stored in tokenizer.json (byte-level alphabet for BPE tokens).
  [[nodiscard]] std::optional<std::string> id_to_token(int32_t id) const;
  // One past the highest id of any token (the embedding table needs at least this many rows).
  [[nodiscard]] int32_t vocab_size() const;
  // Added tokens are matched literally in text and decoded verbatim; special ones are the added
  // tokens that decode(ids, skip_special_tokens = true) drops.
  [[nodiscard]] bool is_added(int32_t id) const;
  [[nodiscard]] bool is_special(int32_t id) const;
  // Asks for the cache lines token_bytes / is_added / is_special read for `id`: the engine loop
  // asks a few sequences ahead of detokenizing their sampled tokens (random rows of the table).
  void prefetch_token(int32_t id) const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::tokenizer
