// DeepSeek-V4 tensor naming. Canonical names are the official DeepSeek checkpoint names
// (DSV4.md §3: "layers.3.attn.wq_a.weight", "layers.3.ffn.experts.7.w2.scale"). Three spellings
// are mapped onto them:
//   official          as released (optionally with a "model." prefix);
//   transformers      in-memory module names (TRANSFORMERS_NOTES.md §J), e.g.
//                     "model.layers.3.self_attn.q_a_proj.weight", "lm_head.weight", FP8 scales
//                     as "weight_scale_inv", routed experts stacked as mlp.experts.gate_up_proj
//                     [E, 2I, D] (gate rows first) and mlp.experts.down_proj [E, D, I];
//   save_pretrained   what transformers 5.24 writes (its conversion map run backwards): official
//                     names under "model." except "model.embed_tokens.weight",
//                     "model.hc_head.hc_{fn,base,scale}" and "attn.norm.weight" for attn.kv_norm.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weights/checkpoint.hpp"
#include "weights/dtype.hpp"

namespace tessera::dsv4 {

// The official name for a stored name. Stacked transformers experts map to
// "layers.{i}.ffn.experts.gate_up_proj" / ".down_proj" (split by build_tensor_catalog). Names
// that match no rule are returned unchanged (minus a "model." prefix) so they surface as extras.
[[nodiscard]] std::string official_tensor_name(std::string_view stored_name);

// Tensors a checkpoint may carry that the engine deliberately does not load (MTP blocks).
[[nodiscard]] bool is_ignored_tensor(std::string_view official_name);

// One stored tensor, or a contiguous slice of one (an expert of a stacked tensor).
struct StoredTensor {
  std::string stored_name;  // as written in the file, for messages
  std::string file;         // shard file name
  weights::DType dtype = weights::DType::F32;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;

  [[nodiscard]] std::string where() const;  // "'model.x.weight' in model.safetensors"
};

// Official name -> stored tensor for every tensor of `ckpt`. Throws tessera::Error when two
// stored tensors claim the same official name or a stacked expert tensor is malformed.
[[nodiscard]] std::map<std::string, StoredTensor> build_tensor_catalog(
    const weights::Checkpoint& ckpt);

}  // namespace tessera::dsv4
