// Byte-pair encoding by merge rank (Sennrich et al. 2016), as Hugging Face `tokenizers`' BPE model
// runs it: a word starts as one symbol per character (per byte for byte-level words), then the
// adjacent pair with the lowest merge rank is merged, leftmost first among equal ranks, until no
// adjacent pair has a merge. A min-heap of candidate pairs keeps this O(n log n) per word.
// Characters missing from the vocabulary become unk_token (fused when fuse_unk), or "<0xNN>" byte
// tokens (byte_fallback), or are dropped when neither is configured — all as in HF.
// Results of short words are cached (bounded, thread-safe); the cache never changes a result.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/pre_tokenizer.hpp"

namespace tessera::tokenizer {

struct BpeOptions {
  std::optional<std::string> unk_token;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;  // a word that is itself in the vocabulary skips merging
  bool byte_level = false;     // words are bytes, mapped through the byte-level alphabet
};

class BpeModel {
 public:
  // Throws tessera::Error when a merge names a token that is not in the vocabulary (the message
  // names the merge's index) or when unk_token is not in the vocabulary.
  BpeModel(std::unordered_map<std::string, int32_t> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options);
  ~BpeModel();
  BpeModel(BpeModel&&) noexcept;
  BpeModel& operator=(BpeModel&&) noexcept;

  // Appends the token ids of one pre-tokenized word.
  void encode_word(const PreTokenizedWord& word, std::vector<int32_t>& out) const;

  [[nodiscard]] std::optional<int32_t> token_to_id(std::string_view token) const;
  [[nodiscard]] const std::unordered_map<std::string, int32_t>& vocab() const { return vocab_; }

 private:
  struct MergeTarget {
    uint32_t rank;
    int32_t id;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  }
  void initial_symbols(std::string_view word, std::vector<int32_t>& symbols) const;
  void add_missing_unit(std::string_view unit, std::vector<int32_t>& symbols,
                        std::optional<int32_t>& pending_unk) const;
  void merge_all(std::vector<int32_t>& symbols) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::unordered_map<uint64_t, MergeTarget> merges_;
  BpeOptions options_;
  std::optional<int32_t> unk_id_;
  std::array<int32_t, 256> byte_symbol_ids_{};  // vocab id of each byte's alphabet character or -1

  struct WordCache;
  std::unique_ptr<WordCache> cache_;
};

}  // namespace tessera::tokenizer
