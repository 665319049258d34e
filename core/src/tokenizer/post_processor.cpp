#include "tokenizer/post_processor.hpp"

#include <utility>

namespace tessera::tokenizer {

void PostProcessor::add_template(std::vector<Piece> single) {
  templates_.push_back(std::move(single));
}

void PostProcessor::apply(std::vector<int32_t>& ids) const {
  for (const auto& pieces : templates_) {
    std::vector<int32_t> result;
    result.reserve(ids.size() + 4);
    for (const Piece& piece : pieces) {
      const auto& source = piece.is_sequence ? ids : piece.ids;
      result.insert(result.end(), source.begin(), source.end());
    }
    ids = std::move(result);
  }
}

}  // namespace tessera::tokenizer
