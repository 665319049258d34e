// DeepSeek-V4 hyper-parameters, read from a Hugging Face config.json. Both the transformers keys
// (layer_types, mlp_layer_types, partial_rotary_factor, rope_parameters, ...) and the official /
// legacy keys (compress_ratios, num_hash_layers, qk_rope_head_dim, rope_scaling, ...) are accepted
// (DSV4.md §1). Values are validated (positive sizes, divisibility) with errors naming the key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tessera::dsv4 {

struct YarnScaling {
  bool enabled = false;  // applied to compressed layers only (ratio != 0)
  double factor = 1.0;
  double original_max_position = 65536;
  double beta_fast = 32;
  double beta_slow = 1;
};

struct ModelConfig {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;  // D
  int64_t num_layers = 0;
  int64_t num_heads = 0;  // H
  int64_t head_dim = 0;   // 512: K == V
  int64_t rope_dim = 0;   // trailing channels with RoPE (64)
  int64_t q_lora_rank = 0;
  int64_t o_groups = 0;
  int64_t o_lora_rank = 0;
  int64_t window = 0;                    // sliding_window (128)
  std::vector<int64_t> compress_ratios;  // per layer: 0, 4 or 128 (length num_layers)
  double rope_theta = 10000;             // ratio-0 layers
  double compress_rope_theta = 160000;   // ratio != 0 layers
  YarnScaling yarn;
  int64_t max_position_embeddings = 0;
  int64_t index_n_heads = 0;
  int64_t index_head_dim = 0;
  int64_t index_topk = 0;
  int64_t hc_mult = 4;
  int64_t hc_sinkhorn_iters = 20;
  double hc_eps = 1e-6;
  int64_t num_hash_layers = 0;  // layers [0, num_hash_layers) route by tid2eid
  int64_t n_routed_experts = 0;
  int64_t n_shared_experts = 1;
  int64_t experts_per_token = 0;
  int64_t moe_intermediate_size = 0;
  double routed_scaling_factor = 1.0;
  bool norm_topk_prob = true;
  double swiglu_limit = 10.0;  // 0 => no clamp
  double rms_norm_eps = 1e-6;
  int64_t bos_token_id = 0;
  int64_t eos_token_id = 1;
  std::vector<int64_t> eos_token_ids;  // all stop ids (eos_token_id may be a list)

  bool is_hash_layer(int64_t layer) const { return layer < num_hash_layers; }
  int64_t compress_ratio(int64_t layer) const { return compress_ratios.at(layer); }
};

// Parses and validates <dir>/config.json. Throws tessera::Error naming the file and the key.
ModelConfig load_model_config(const std::filesystem::path& model_dir);
ModelConfig parse_model_config(const std::string& json_text, const std::string& source_name);

}  // namespace tessera::dsv4
