// Streaming detokenization: turns the ids of one sequence, fed one or a few at a time, into text
// pieces that are always complete UTF-8. The concatenation of every piece plus finish() equals
// Tokenizer::decode of all the ids (same U+FFFD placement, same added-token handling), whatever
// the chunking.
//
// Bytes of a character still being spelled by byte-level tokens are held back until the character
// completes. A sequence that can no longer complete becomes U+FFFD as soon as that is certain:
// when a byte arrives that cannot continue it, or when an added token (which ends HF's decode run)
// arrives. finish() turns a held-back incomplete tail into one U+FFFD.
//
// One instance per sequence; not thread-safe; keeps a reference to the Tokenizer, which must
// outlive it.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tokenizer/tokenizer.hpp"

namespace tessera::tokenizer {

class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens = false);

  // Appends one token; returns the text that became final (often empty mid-character).
  [[nodiscard]] std::string push(int32_t id);
  [[nodiscard]] std::string push(std::span<const int32_t> ids);

  // End of the sequence: the incomplete tail, if any, as U+FFFD. The detokenizer is then empty
  // and may be reused for a new sequence.
  [[nodiscard]] std::string finish();

  // Asks for what push(id) will read of the tokenizer's table (Tokenizer::prefetch_token).
  void prefetch(int32_t id) const { tokenizer_.prefetch_token(id); }

  // Bytes held back, waiting for the rest of a character.
  [[nodiscard]] std::size_t pending_bytes() const { return pending_.size(); }

 private:
  void push_into(int32_t id, std::string& out);

  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  std::string pending_;  // always a prefix of one valid-so-far UTF-8 sequence (< 4 bytes)
};

}  // namespace tessera::tokenizer
