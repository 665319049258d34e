// Reads a Hugging Face `tokenizer.json` into the tokenizer's parts. Supported (everything the
// DeepSeek-V3/V4 files use, plus the common neighbours):
//   model           BPE: vocab, merges ("a b" strings or ["a","b"] pairs), unk_token, fuse_unk,
//                   byte_fallback, ignore_merges; dropout null/0; no subword prefix/suffix
//   added_tokens    id, content, single_word, lstrip, rstrip, normalized, special
//   normalizer      null (or an empty Sequence)
//   pre_tokenizer   null, Split{pattern {Regex|String}, behavior, invert},
//   ByteLevel{add_prefix_space,
//                   use_regex}, or a Sequence of those with ByteLevel last
//   post_processor  null, ByteLevel, TemplateProcessing (single), Sequence of those
//   decoder         ByteLevel
// truncation / padding are runtime settings of HF's Python wrapper and are ignored.
// Anything else is refused with a tessera::Error whose message names the field, e.g.
// "tokenizer.json: pre_tokenizer.pretokenizers[1].behavior: unknown value 'Isolate'".
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/added_tokens.hpp"
#include "tokenizer/bpe_model.hpp"
#include "tokenizer/post_processor.hpp"
#include "tokenizer/pre_tokenizer.hpp"

namespace tessera::tokenizer {

struct TokenizerParts {
  std::vector<AddedToken> added_tokens;
  PreTokenizer pre_tokenizer;
  BpeModel model;
  PostProcessor post_processor;
};

// `origin` prefixes error messages (a file path, or "tokenizer.json").
[[nodiscard]] TokenizerParts parse_tokenizer_json(std::string_view json_text,
                                                  std::string_view origin);

}  // namespace tessera::tokenizer
