#include "ops/moe_grouping.hpp"

#include <algorithm>

namespace tessera::ops {

void group_routed_rows(const int32_t* picked, const float* weight, int64_t tokens, int64_t K,
                       int64_t E, int64_t* offsets, int64_t* source, int64_t* src,
                       float* combine_weight) {
  const int64_t n = tokens * K;
  std::fill(source, source + n, 0);
  std::fill(src, src + n, 0);
  std::fill(combine_weight, combine_weight + n, 0.0f);
  std::fill(offsets, offsets + E + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    if (picked[i] >= 0 && picked[i] < E) {
      ++offsets[picked[i] + 1];
    }
  }
  for (int64_t e = 0; e < E; ++e) {
    offsets[e + 1] += offsets[e];
  }
  for (int64_t e = 0; e < E; ++e) {
    int64_t row = offsets[e];
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t k = 0; k < K; ++k) {
        if (picked[t * K + k] != e) {
          continue;
        }
        int64_t c = 0;  // picks of t with a smaller expert come first
        for (int64_t j = 0; j < K; ++j) {
          c += picked[t * K + j] >= 0 && picked[t * K + j] < e;
        }
        source[row] = t;
        src[t * K + c] = row;
        combine_weight[t * K + c] = weight[t * K + k];
        ++row;
      }
    }
  }
}

}  // namespace tessera::ops
