#include "model/bf16_weights.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tessera::dsv4 {

namespace {

// Calls f(tensor) for every tensor that only ever is a GEMM's W.
template <typename F>
void for_each_linear_weight(ModelWeights& w, const F& f) {
  f(w.head);
  f(w.hc_head_fn);
  for (Layer& l : w.layers) {
    f(l.hc_attn.fn);
    f(l.hc_ffn.fn);
    Attention& a = l.attn;
    for (Tensor* t : {&a.wq_a, &a.wq_b, &a.wkv, &a.wo_a, &a.wo_b}) {
      f(*t);
    }
    if (a.compressor) {
      f(a.compressor->wkv);
      f(a.compressor->wgate);
    }
    if (a.indexer) {
      f(a.indexer->wq_b);
      f(a.indexer->weights_proj);
      f(a.indexer->compressor.wkv);
      f(a.indexer->compressor.wgate);
    }
    f(l.ffn.gate);
    for (Tensor* t : {&l.ffn.shared.w1, &l.ffn.shared.w2, &l.ffn.shared.w3}) {
      f(*t);
    }
    for (Expert& e : l.ffn.experts) {
      for (Tensor* t : {&e.w1, &e.w2, &e.w3}) {
        f(*t);
      }
    }
  }
}

}  // namespace

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
    std::vector<float>().swap(t.data);
    ++summary.tensors;
  });
  return summary;
}

}  // namespace tessera::dsv4
