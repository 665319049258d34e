// What encode(text, add_special_tokens = true) adds around the ids: Hugging Face's
// TemplateProcessing for a single sequence (e.g. "<bos> $A" puts the BOS id first). ByteLevel
// post-processing changes only offsets, never ids, so it contributes nothing here.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::tokenizer {

class PostProcessor {
 public:
  // One piece of a template: the encoded sequence itself, or fixed ids (a special token).
  struct Piece {
    bool is_sequence = false;
    std::vector<int32_t> ids;
  };

  // Appends one TemplateProcessing step; steps apply in order (HF's Sequence processor).
  void add_template(std::vector<Piece> single);

  // Applies every step to `ids` (the whole encoding of one text).
  void apply(std::vector<int32_t>& ids) const;

 private:
  std::vector<std::vector<Piece>> templates_;
};

}  // namespace tessera::tokenizer
