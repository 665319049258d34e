#include "tokenizer/model_tokenizer.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "util/check.hpp"

namespace tessera::tokenizer {

ModelTokenizer load_model_tokenizer(const std::filesystem::path& model_dir, int64_t vocab_size) {
  const auto path = model_dir / "tokenizer.json";
  if (std::filesystem::exists(path)) {
    return {Tokenizer::from_file(path), false};
  }
  TS_CHECK(vocab_size > 0 && vocab_size <= INT32_MAX, "id tokenizer: vocab_size {} out of range",
           vocab_size);
  return {make_id_tokenizer(static_cast<int32_t>(vocab_size)), true};
}

Tokenizer make_id_tokenizer(int32_t vocab_size) {
  TS_CHECK(vocab_size > 0, "id tokenizer: vocab_size {} must be positive", vocab_size);
  // A byte-level BPE model whose vocabulary is "<0>", "<1>", ... and no merges, read by the same
  // loader as any HF tokenizer.json. '<', '>' and digits are printable ASCII, which the
  // byte-level alphabet maps to themselves, so token i decodes to the bytes "<i>".
  nlohmann::json vocab = nlohmann::json::object();
  for (int32_t i = 0; i < vocab_size; ++i) {
    vocab[fmt::format("<{}>", i)] = i;
  }
  const nlohmann::json doc = {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  return Tokenizer::from_json(doc.dump(), "<id tokenizer>");
}

}  // namespace tessera::tokenizer
