// A stand-in tokenizer for checkpoints that ship no tokenizer.json (the parity fixtures of
// tests/data/parity): token id i is the text "<i>". Prompts must then be given as token ids; the
// generated "text" reads "<17><4>...", and the repetition guard sees one distinct, non-blank
// string per id, so a loop of ids is still a loop.
#pragma once

#include <cstdint>

#include "tokenizer/tokenizer.hpp"

namespace tessera::ab {

tokenizer::Tokenizer make_id_tokenizer(int32_t vocab_size);

}  // namespace tessera::ab
