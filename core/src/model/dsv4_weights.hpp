// DeepSeek-V4 weights in the engine's working form: fp32, row-major, official DeepSeek layout
// (Linear weights are [out, in]). Produced by load_model_weights() from a checkpoint whatever its
// names (official or transformers) and dtypes (F32, BF16, FP8 e4m3 + 128x128 UE8M0 scales, packed
// FP4 e2m1 experts + per-32 UE8M0 scales). Shapes below use the ModelConfig names. The runtime
// then keeps linear weights whose values are all bfloat16s in Tensor::bf16
// (model/bf16_weights.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "ops/tensor.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

struct HyperConnection {  // one mHC site (attention or FFN)
  Tensor fn;              // [(2 + hc) * hc, hc * D] = [24, 4D]
  Tensor base;            // [24]
  Tensor scale;           // [3]
};

struct Compressor {  // main (d = head_dim) or indexer (d = index_head_dim)
  Tensor ape;        // [m, c*d]  (c = 2 when m == 4, else 1)
  Tensor wkv;        // [c*d, D]
  Tensor wgate;      // [c*d, D]
  Tensor norm;       // [d]
};

struct Indexer {        // CSA layers only
  Tensor wq_b;          // [index_n_heads * index_head_dim, q_lora_rank]
  Tensor weights_proj;  // [index_n_heads, D]
  Compressor compressor;
};

struct Attention {
  Tensor attn_sink;                      // [H]
  Tensor wq_a;                           // [q_lora_rank, D]
  Tensor q_norm;                         // [q_lora_rank]
  Tensor wq_b;                           // [H * head_dim, q_lora_rank]
  Tensor wkv;                            // [head_dim, D]
  Tensor kv_norm;                        // [head_dim]
  Tensor wo_a;                           // [o_groups * o_lora_rank, H * head_dim / o_groups]
  Tensor wo_b;                           // [D, o_groups * o_lora_rank]
  std::optional<Compressor> compressor;  // ratio != 0
  std::optional<Indexer> indexer;        // ratio == 4
};

struct Expert {  // SwiGLU: w2(silu(w1 x) * (w3 x))
  Tensor w1;     // [I, D] gate
  Tensor w3;     // [I, D] up
  Tensor w2;     // [D, I] down
};

struct Moe {
  Tensor gate;                   // [E, D] router
  std::optional<Tensor> bias;    // [E] e_score_correction_bias (learned layers)
  std::vector<int32_t> tid2eid;  // [vocab * experts_per_token] (hash layers), empty otherwise
  Expert shared;                 // n_shared_experts == 1
  std::vector<Expert> experts;   // [E]
};

struct Layer {
  Tensor attn_norm;  // [D]
  Tensor ffn_norm;   // [D]
  HyperConnection hc_attn;
  HyperConnection hc_ffn;
  Attention attn;
  Moe ffn;
};

struct ModelWeights {
  Tensor embed;          // [V, D]
  Tensor head;           // [V, D]
  Tensor norm;           // [D]
  Tensor hc_head_fn;     // [hc, hc * D]
  Tensor hc_head_base;   // [hc]
  Tensor hc_head_scale;  // [1]
  std::vector<Layer> layers;
};

// Calls f(tensor) for every linear weight: the tensors that are only ever a GEMM's W (projections,
// experts, router, mHC mixes, vocabulary head). Weights: ModelWeights, const or not.
template <typename Weights, typename F>
void for_each_linear_weight(Weights& w, const F& f) {
  f(w.head);
  f(w.hc_head_fn);
  for (auto& l : w.layers) {
    f(l.hc_attn.fn);
    f(l.hc_ffn.fn);
    auto& a = l.attn;
    for (auto* t : {&a.wq_a, &a.wq_b, &a.wkv, &a.wo_a, &a.wo_b}) {
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
    for (auto* t : {&l.ffn.shared.w1, &l.ffn.shared.w2, &l.ffn.shared.w3}) {
      f(*t);
    }
    for (auto& e : l.ffn.experts) {
      for (auto* t : {&e.w1, &e.w2, &e.w3}) {
        f(*t);
      }
    }
  }
}

// Opens <dir> (config.json, model.safetensors or model.safetensors.index.json + shards),
// validates every tensor against the config (presence, dtype, shape; extras are named) and
// dequantizes to fp32. Throws tessera::Error naming the tensor and the reason.
ModelWeights load_model_weights(const std::filesystem::path& model_dir, const ModelConfig& config);

}  // namespace tessera::dsv4
