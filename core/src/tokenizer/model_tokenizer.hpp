// The tokenizer of a model directory: its tokenizer.json or, for a checkpoint that ships none
// (the parity fixtures of tests/data/parity), a stand-in where token id i is the text "<i>".
// Prompts must then be given as token ids; the generated "text" reads "<17><4>...", and the
// repetition guard sees one distinct, non-blank string per id, so a loop of ids is still a loop.
#pragma once

#include <cstdint>
#include <filesystem>

#include "tokenizer/tokenizer.hpp"

namespace tessera::tokenizer {

struct ModelTokenizer {
  Tokenizer tokenizer;
  bool ids_only = false;  // no tokenizer.json: the id stand-in, which encodes no text
};

// <model_dir>/tokenizer.json when it exists, else the id stand-in over the model's vocab_size.
[[nodiscard]] ModelTokenizer load_model_tokenizer(const std::filesystem::path& model_dir,
                                                  int64_t vocab_size);

// The id stand-in for a vocabulary of vocab_size tokens.
[[nodiscard]] Tokenizer make_id_tokenizer(int32_t vocab_size);

}  // namespace tessera::tokenizer
