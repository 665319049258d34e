#include "model/random_weights.hpp"

#include <cmath>
#include <numeric>

namespace tessera::dsv4 {

namespace {

class Rng {  // SplitMix64 (Steele et al. 2014): fast, good enough for weights
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform(float bound) {  // in [-bound, bound)
    return (static_cast<float>(next() >> 40) / 16777216.0f * 2.0f - 1.0f) * bound;
  }

 private:
  uint64_t state_;
};

Tensor filled(std::vector<int64_t> shape, float value) {
  Tensor t;
  t.shape = std::move(shape);
  t.data.assign(static_cast<size_t>(std::accumulate(t.shape.begin(), t.shape.end(), int64_t{1},
                                                    std::multiplies<>())),
                value);
  return t;
}

Tensor uniform(Rng& rng, std::vector<int64_t> shape, float bound) {
  Tensor t = filled(std::move(shape), 0.0f);
  for (float& v : t.data) v = rng.uniform(bound);
  return t;
}

Tensor linear(Rng& rng, int64_t out, int64_t in) {
  return uniform(rng, {out, in}, 1.0f / std::sqrt(static_cast<float>(in)));
}

Compressor compressor(Rng& rng, const ModelConfig& c, int64_t m, int64_t d) {
  const int64_t width = (m == 4 ? 2 : 1) * d;
  return Compressor{uniform(rng, {m, width}, 0.5f), linear(rng, width, c.hidden_size),
                    linear(rng, width, c.hidden_size), filled({d}, 1.0f)};
}

Expert expert(Rng& rng, const ModelConfig& c) {
  const int64_t D = c.hidden_size, I = c.moe_intermediate_size;
  return Expert{linear(rng, I, D), linear(rng, I, D), linear(rng, D, I)};
}

HyperConnection hc(Rng& rng, const ModelConfig& c) {
  const int64_t n = c.hc_mult;
  return HyperConnection{uniform(rng, {(2 + n) * n, n * c.hidden_size}, 0.01f),
                         uniform(rng, {(2 + n) * n}, 0.5f), uniform(rng, {3}, 0.5f)};
}

}  // namespace

ModelWeights random_model_weights(const ModelConfig& c, uint64_t seed) {
  Rng rng(seed);
  const int64_t D = c.hidden_size, H = c.num_heads, Dh = c.head_dim;
  ModelWeights w;
  w.embed = uniform(rng, {c.vocab_size, D}, 1.0f);
  w.head = linear(rng, c.vocab_size, D);
  w.norm = filled({D}, 1.0f);
  w.hc_head_fn = uniform(rng, {c.hc_mult, c.hc_mult * D}, 0.01f);
  w.hc_head_base = uniform(rng, {c.hc_mult}, 0.5f);
  w.hc_head_scale = filled({1}, 1.0f);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    Layer layer;
    layer.attn_norm = filled({D}, 1.0f);
    layer.ffn_norm = filled({D}, 1.0f);
    layer.hc_attn = hc(rng, c);
    layer.hc_ffn = hc(rng, c);
    Attention& a = layer.attn;
    a.attn_sink = uniform(rng, {H}, 1.0f);
    a.wq_a = linear(rng, c.q_lora_rank, D);
    a.q_norm = filled({c.q_lora_rank}, 1.0f);
    a.wq_b = linear(rng, H * Dh, c.q_lora_rank);
    a.wkv = linear(rng, Dh, D);
    a.kv_norm = filled({Dh}, 1.0f);
    a.wo_a = linear(rng, c.o_groups * c.o_lora_rank, H * Dh / c.o_groups);
    a.wo_b = linear(rng, D, c.o_groups * c.o_lora_rank);
    const int64_t m = c.compress_ratio(l);
    if (m > 0) a.compressor = compressor(rng, c, m, Dh);
    if (m == 4)
      a.indexer = Indexer{linear(rng, c.index_n_heads * c.index_head_dim, c.q_lora_rank),
                          linear(rng, c.index_n_heads, D), compressor(rng, c, m, c.index_head_dim)};
    Moe& moe = layer.ffn;
    moe.gate = linear(rng, c.n_routed_experts, D);
    if (c.is_hash_layer(l)) {
      moe.tid2eid.resize(static_cast<size_t>(c.vocab_size * c.experts_per_token));
      for (int64_t t = 0; t < c.vocab_size; ++t) {
        const auto first = static_cast<int64_t>(rng.next() % c.n_routed_experts);
        for (int64_t k = 0; k < c.experts_per_token; ++k)  // distinct ids: consecutive mod E
          moe.tid2eid[t * c.experts_per_token + k] =
              static_cast<int32_t>((first + k) % c.n_routed_experts);
      }
    } else {
      moe.bias = uniform(rng, {c.n_routed_experts}, 0.1f);
    }
    moe.shared = expert(rng, c);
    for (int64_t e = 0; e < c.n_routed_experts; ++e) moe.experts.push_back(expert(rng, c));
    w.layers.push_back(std::move(layer));
  }
  return w;
}

uint64_t decode_weight_bytes(const ModelConfig& c, int64_t bytes_per_linear_weight) {
  const int64_t D = c.hidden_size, H = c.num_heads, Dh = c.head_dim;
  const int64_t expert_params = 3 * D * c.moe_intermediate_size;
  const int64_t fp32_params = D + D;                              // the embedding row, the norm
  int64_t params = c.vocab_size * D + c.hc_mult * c.hc_mult * D;  // head, hc_head
  for (int64_t l = 0; l < c.num_layers; ++l) {
    params += 2 * (2 + c.hc_mult) * c.hc_mult * c.hc_mult * D;  // two mHC sites
    params += c.q_lora_rank * D + H * Dh * c.q_lora_rank + Dh * D +
              c.o_groups * c.o_lora_rank * H * Dh / c.o_groups + D * c.o_groups * c.o_lora_rank;
    const int64_t m = c.compress_ratio(l);
    if (m > 0) params += 2 * (m == 4 ? 2 : 1) * Dh * D;
    if (m == 4)
      params += c.index_n_heads * c.index_head_dim * c.q_lora_rank + c.index_n_heads * D +
                2 * 2 * c.index_head_dim * D;
    params += c.n_routed_experts * D + expert_params * (1 + c.experts_per_token);
  }
  return static_cast<uint64_t>(params * bytes_per_linear_weight + fp32_params * 4);
}

uint64_t parameter_count(const ModelWeights& w) {
  uint64_t n = static_cast<uint64_t>(w.embed.numel() + w.norm.numel());
  for_each_linear_weight(w, [&](const Tensor& t) { n += static_cast<uint64_t>(t.numel()); });
  return n;
}

}  // namespace tessera::dsv4
