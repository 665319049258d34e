#include "ab/ab_report.hpp"

#include <algorithm>

namespace tessera::ab {

int64_t first_divergence(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const auto mismatch = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  if (mismatch.first == a.end() && mismatch.second == b.end()) return -1;
  return static_cast<int64_t>(mismatch.first - a.begin());
}

}  // namespace tessera::ab
