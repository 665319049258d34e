#include "tokenizer/unicode_supplement.hpp"

#include <fmt/format.h>

namespace tessera::tokenizer {

std::string unicode16_class_items(std::string_view property) {
  if (property.empty() || property.size() > 2) {
    return {};
  }
  std::string items;
  for (const CategorySupplement& entry : unicode16_supplement()) {
    // "L" covers every "L?" category; "Lu" only itself.
    const bool covered = property.size() == 1 ? entry.category.front() == property.front()
                                              : entry.category == property;
    if (!covered) {
      continue;
    }
    for (const auto& [lo, hi] : entry.ranges) {
      items += fmt::format("\\x{{{:X}}}", static_cast<uint32_t>(lo));
      if (hi != lo) {
        items += fmt::format("-\\x{{{:X}}}", static_cast<uint32_t>(hi));
      }
    }
  }
  return items;
}

}  // namespace tessera::tokenizer
