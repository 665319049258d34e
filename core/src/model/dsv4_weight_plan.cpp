#include "model/dsv4_weight_plan.hpp"

#include <fmt/format.h>

namespace tessera::dsv4 {
namespace {

class Planner {
 public:
  explicit Planner(std::vector<TensorSpec>& specs) : specs_(specs) {}

  void add(std::string name, Tensor& dst, std::vector<int64_t> shape, std::string dims,
           StorageKind kind = StorageKind::Dense) {
    TensorSpec spec;
    spec.name = std::move(name);
    spec.shape = std::move(shape);
    spec.dims = std::move(dims);
    spec.kind = kind;
    spec.dst = &dst;
    specs_.push_back(std::move(spec));
  }
  void linear(std::string name, Tensor& dst, int64_t out, int64_t in, std::string dims) {
    add(std::move(name), dst, {out, in}, std::move(dims), StorageKind::Linear);
  }
  void table(std::string name, std::vector<int32_t>& dst, int64_t rows, int64_t cols,
             int64_t limit) {
    TensorSpec spec;
    spec.name = std::move(name);
    spec.shape = {rows, cols};
    spec.dims = "[vocab_size, num_experts_per_tok]";
    spec.kind = StorageKind::TokenTable;
    spec.table = &dst;
    spec.table_limit = limit;
    specs_.push_back(std::move(spec));
  }

 private:
  std::vector<TensorSpec>& specs_;
};

void plan_hyper_connection(Planner& p, const std::string& prefix, HyperConnection& hc,
                           const ModelConfig& c) {
  const int64_t mix = (2 + c.hc_mult) * c.hc_mult;
  p.add(prefix + "_fn", hc.fn, {mix, c.hc_mult * c.hidden_size},
        "[(2 + hc_mult) * hc_mult, hc_mult * hidden_size]");
  p.add(prefix + "_base", hc.base, {mix}, "[(2 + hc_mult) * hc_mult]");
  p.add(prefix + "_scale", hc.scale, {3}, "[3]");
}

// Main compressor (d = head_dim) or the indexer's (d = index_head_dim); c = 2 overlapping
// windows when ratio == 4.
void plan_compressor(Planner& p, const std::string& prefix, Compressor& comp, int64_t ratio,
                     int64_t d, const std::string& d_name, const ModelConfig& c) {
  const int64_t overlap = ratio == 4 ? 2 : 1;
  const std::string width = overlap == 2 ? "2 * " + d_name : d_name;
  p.add(prefix + "ape", comp.ape, {ratio, overlap * d},
        fmt::format("[ratio {}, {}]", ratio, width));
  p.linear(prefix + "wkv.weight", comp.wkv, overlap * d, c.hidden_size,
           fmt::format("[{}, hidden_size]", width));
  p.linear(prefix + "wgate.weight", comp.wgate, overlap * d, c.hidden_size,
           fmt::format("[{}, hidden_size]", width));
  p.add(prefix + "norm.weight", comp.norm, {d}, fmt::format("[{}]", d_name));
}

void plan_attention(Planner& p, const std::string& prefix, Attention& a, int64_t ratio,
                    const ModelConfig& c) {
  const int64_t q_width = c.num_heads * c.head_dim;
  p.add(prefix + "attn_sink", a.attn_sink, {c.num_heads}, "[num_attention_heads]");
  p.linear(prefix + "wq_a.weight", a.wq_a, c.q_lora_rank, c.hidden_size,
           "[q_lora_rank, hidden_size]");
  p.add(prefix + "q_norm.weight", a.q_norm, {c.q_lora_rank}, "[q_lora_rank]");
  p.linear(prefix + "wq_b.weight", a.wq_b, q_width, c.q_lora_rank,
           "[num_attention_heads * head_dim, q_lora_rank]");
  p.linear(prefix + "wkv.weight", a.wkv, c.head_dim, c.hidden_size, "[head_dim, hidden_size]");
  p.add(prefix + "kv_norm.weight", a.kv_norm, {c.head_dim}, "[head_dim]");
  p.linear(prefix + "wo_a.weight", a.wo_a, c.o_groups * c.o_lora_rank, q_width / c.o_groups,
           "[o_groups * o_lora_rank, num_attention_heads * head_dim / o_groups]");
  p.linear(prefix + "wo_b.weight", a.wo_b, c.hidden_size, c.o_groups * c.o_lora_rank,
           "[hidden_size, o_groups * o_lora_rank]");
  if (ratio == 0) {
    return;
  }
  plan_compressor(p, prefix + "compressor.", a.compressor.emplace(), ratio, c.head_dim, "head_dim",
                  c);
  if (ratio != 4) {
    return;
  }
  Indexer& idx = a.indexer.emplace();
  p.linear(prefix + "indexer.wq_b.weight", idx.wq_b, c.index_n_heads * c.index_head_dim,
           c.q_lora_rank, "[index_n_heads * index_head_dim, q_lora_rank]");
  p.linear(prefix + "indexer.weights_proj.weight", idx.weights_proj, c.index_n_heads, c.hidden_size,
           "[index_n_heads, hidden_size]");
  plan_compressor(p, prefix + "indexer.compressor.", idx.compressor, ratio, c.index_head_dim,
                  "index_head_dim", c);
}

void plan_expert(Planner& p, const std::string& prefix, Expert& e, StorageKind kind,
                 const ModelConfig& c) {
  const int64_t inter = c.moe_intermediate_size;
  p.add(prefix + "w1.weight", e.w1, {inter, c.hidden_size}, "[moe_intermediate_size, hidden_size]",
        kind);
  p.add(prefix + "w2.weight", e.w2, {c.hidden_size, inter}, "[hidden_size, moe_intermediate_size]",
        kind);
  p.add(prefix + "w3.weight", e.w3, {inter, c.hidden_size}, "[moe_intermediate_size, hidden_size]",
        kind);
}

void plan_moe(Planner& p, const std::string& prefix, Moe& moe, int64_t layer,
              const ModelConfig& c) {
  p.linear(prefix + "gate.weight", moe.gate, c.n_routed_experts, c.hidden_size,
           "[n_routed_experts, hidden_size]");
  if (c.is_hash_layer(layer)) {
    p.table(prefix + "gate.tid2eid", moe.tid2eid, c.vocab_size, c.experts_per_token,
            c.n_routed_experts);
  } else {
    p.add(prefix + "gate.bias", moe.bias.emplace(), {c.n_routed_experts}, "[n_routed_experts]");
  }
  plan_expert(p, prefix + "shared_experts.", moe.shared, StorageKind::Linear, c);
  for (int64_t e = 0; e < c.n_routed_experts; ++e) {
    plan_expert(p, fmt::format("{}experts.{}.", prefix, e), moe.experts[static_cast<size_t>(e)],
                StorageKind::RoutedExpert, c);
  }
}

}  // namespace

std::vector<TensorSpec> plan_model_tensors(const ModelConfig& c, ModelWeights& w) {
  std::vector<TensorSpec> specs;
  Planner p(specs);
  p.add("embed.weight", w.embed, {c.vocab_size, c.hidden_size}, "[vocab_size, hidden_size]");
  p.linear("head.weight", w.head, c.vocab_size, c.hidden_size, "[vocab_size, hidden_size]");
  p.add("norm.weight", w.norm, {c.hidden_size}, "[hidden_size]");
  p.add("hc_head_fn", w.hc_head_fn, {c.hc_mult, c.hc_mult * c.hidden_size},
        "[hc_mult, hc_mult * hidden_size]");
  p.add("hc_head_base", w.hc_head_base, {c.hc_mult}, "[hc_mult]");
  p.add("hc_head_scale", w.hc_head_scale, {1}, "[1]");

  w.layers.assign(static_cast<size_t>(c.num_layers), Layer{});
  for (int64_t i = 0; i < c.num_layers; ++i) {
    Layer& layer = w.layers[static_cast<size_t>(i)];
    layer.ffn.experts.resize(static_cast<size_t>(c.n_routed_experts));
    const std::string prefix = fmt::format("layers.{}.", i);
    p.add(prefix + "attn_norm.weight", layer.attn_norm, {c.hidden_size}, "[hidden_size]");
    p.add(prefix + "ffn_norm.weight", layer.ffn_norm, {c.hidden_size}, "[hidden_size]");
    plan_hyper_connection(p, prefix + "hc_attn", layer.hc_attn, c);
    plan_hyper_connection(p, prefix + "hc_ffn", layer.hc_ffn, c);
    plan_attention(p, prefix + "attn.", layer.attn, c.compress_ratio(i), c);
    plan_moe(p, prefix + "ffn.", layer.ffn, i, c);
  }
  return specs;
}

}  // namespace tessera::dsv4
