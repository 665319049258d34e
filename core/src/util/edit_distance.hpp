// "Did you mean ...?" for unknown keys, plugin names and CLI words. Shared by the config loader,
// the JSON-Schema validator and the plugin registry so every refusal suggests the same way.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::util {

// Optimal-string-alignment distance (Levenshtein plus adjacent transposition, Damerau 1964):
// "temprature" -> "temperature" is 1, "tpo_k" -> "top_k" is 1. Case-sensitive.
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, or "" when none is close enough to be a plausible typo.
// "Close" means distance <= max(1, len(word) / 3) (so short words allow one edit, longer words
// a third of their length); ties go to the earliest candidate. A case-insensitive exact match
// counts as distance 0.
[[nodiscard]] std::string nearest(std::string_view word,
                                  const std::vector<std::string>& candidates);

}  // namespace tessera::util
