#include "model/bf16_weights.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tessera::dsv4 {

bool is_bf16_exact(float v) { return (std::bit_cast<uint32_t>(v) & 0xFFFFu) == 0; }

void round_linear_weights_to_bf16(ModelWeights& weights) {
  for_each_linear_weight(weights, [](Tensor& t) {
    for (float& v : t.data) {
      const auto bits = std::bit_cast<uint32_t>(v);
      if (std::isfinite(v)) {  // round to nearest, ties to even, on the dropped 16 bits
        const uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
        v = std::bit_cast<float>(rounded & 0xFFFF0000u);
      }
    }
  });
}

Bf16Summary keep_linear_weights_in_bf16(ModelWeights& weights) {
  Bf16Summary summary;
  for_each_linear_weight(weights, [&](Tensor& t) {
    if (t.data.empty()) {
      return;
    }
    if (!std::all_of(t.data.begin(), t.data.end(), is_bf16_exact)) {
      ++summary.kept_fp32;
      return;
    }
    t.bf16.resize(t.data.size());
    std::transform(t.data.begin(), t.data.end(), t.bf16.begin(),
                   [](float v) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16); });
    summary.bytes_saved += static_cast<int64_t>(t.data.size() * (sizeof(float) - sizeof(uint16_t)));
    decltype(t.data)().swap(t.data);
    ++summary.tensors;
  });
  return summary;
}

}  // namespace tessera::dsv4
