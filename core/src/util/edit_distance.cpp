#include "util/edit_distance.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

namespace tessera::util {

namespace {

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  const std::size_t m = b.size();
  // d[i][j]: distance between a[0..i) and b[0..j). Three rows suffice for the transposition term.
  std::vector<std::size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  const std::size_t threshold = std::max<std::size_t>(1, word.size() / 3);
  const std::string word_lower = lowercase(word);
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  const std::string* best = nullptr;
  for (const std::string& candidate : candidates) {
    const std::size_t d = lowercase(candidate) == word_lower ? 0 : edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = &candidate;
    }
  }
  if (best == nullptr || best_distance > threshold) return "";
  return *best;
}

}  // namespace tessera::util
