#include "ab/id_tokenizer.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "util/check.hpp"

namespace tessera::ab {

tokenizer::Tokenizer make_id_tokenizer(int32_t vocab_size) {
  TS_CHECK(vocab_size > 0, "id tokenizer: vocab_size {} must be positive", vocab_size);
  // A plain (not byte-level) BPE model whose vocabulary is "<0>", "<1>", ... and no merges:
  // tokenizer_json.cpp accepts it as it accepts any HF tokenizer.json.
  nlohmann::json vocab = nlohmann::json::object();
  for (int32_t i = 0; i < vocab_size; ++i) vocab[fmt::format("<{}>", i)] = i;
  const nlohmann::json doc = {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", nullptr},
      {"post_processor", nullptr},
      {"decoder", nullptr},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  return tokenizer::Tokenizer::from_json(doc.dump(), "<id tokenizer>");
}

}  // namespace tessera::ab
