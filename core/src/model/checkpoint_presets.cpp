#include "model/checkpoint_presets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "util/check.hpp"

namespace tessera::dsv4 {
namespace {

std::vector<int64_t> release_schedule(int64_t layers, int64_t leading_window_layers,
                                      int64_t leading_hca_layers) {
  // Flash: [0, 0] + [4, 128] * 20 + [4]; Pro: [128, 128] + [4, 128] * 29 + [4] (DSV4.md §1).
  std::vector<int64_t> r(static_cast<size_t>(leading_window_layers), 0);
  r.insert(r.end(), static_cast<size_t>(leading_hca_layers), 128);
  while (static_cast<int64_t>(r.size()) < layers) r.push_back(r.size() % 2 == 0 ? 4 : 128);
  return r;
}

}  // namespace

ModelConfig preset_model_config(const std::string& name, const PresetReduction& reduction) {
  ModelConfig c;
  c.vocab_size = 129280;
  c.num_heads = 64;
  c.head_dim = 512;
  c.rope_dim = 64;
  c.window = 128;
  c.yarn = {true, 16, 65536, 32, 1};
  c.max_position_embeddings = 1 << 20;
  c.index_n_heads = 64;
  c.index_head_dim = 128;
  c.num_hash_layers = 3;
  c.experts_per_token = 6;
  c.o_lora_rank = 1024;
  if (name == "flash") {
    c.hidden_size = 4096;
    c.num_layers = 43;
    c.q_lora_rank = 1024;
    c.o_groups = 8;
    c.index_topk = 512;
    c.n_routed_experts = 256;
    c.moe_intermediate_size = 2048;
    c.routed_scaling_factor = 1.5;
    c.compress_ratios = release_schedule(43, 2, 0);
  } else if (name == "pro") {
    c.hidden_size = 7168;
    c.num_layers = 61;
    c.num_heads = 128;
    c.q_lora_rank = 1536;
    c.o_groups = 16;
    c.index_topk = 1024;
    c.n_routed_experts = 384;
    c.moe_intermediate_size = 3072;
    c.routed_scaling_factor = 2.5;
    c.compress_ratios = release_schedule(61, 0, 2);
  } else {
    throw Error(fmt::format("unknown model preset `{}` (use flash or pro)", name));
  }
  TS_CHECK(reduction.layers >= 0 && reduction.layers <= c.num_layers,
           "preset {} has {} layers; {} asked", name, c.num_layers, reduction.layers);
  if (reduction.layers > 0 && reduction.layers < c.num_layers) {
    c.num_layers = reduction.layers;
    c.compress_ratios = {0};  // then CSA, HCA, CSA, ...
    while (static_cast<int64_t>(c.compress_ratios.size()) < c.num_layers)
      c.compress_ratios.push_back(c.compress_ratios.size() % 2 == 1 ? 4 : 128);
    c.num_hash_layers = std::min<int64_t>(3, c.num_layers - 1);
  }
  if (reduction.experts > 0) {
    c.n_routed_experts = reduction.experts;
    c.experts_per_token = std::min<int64_t>(6, reduction.experts);
  }
  if (reduction.vocab > 0) {
    TS_CHECK(reduction.vocab >= 16, "a vocabulary of {} rows is too small", reduction.vocab);
    c.vocab_size = reduction.vocab;
  }
  return c;
}

std::string official_config_json(const ModelConfig& c) {
  nlohmann::ordered_json j;
  j["architectures"] = {"DeepseekV4ForCausalLM"};
  j["model_type"] = "deepseek_v4";
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["num_hidden_layers"] = c.num_layers;
  j["num_attention_heads"] = c.num_heads;
  j["num_key_value_heads"] = 1;
  j["head_dim"] = c.head_dim;
  j["qk_rope_head_dim"] = c.rope_dim;
  j["q_lora_rank"] = c.q_lora_rank;
  j["o_groups"] = c.o_groups;
  j["o_lora_rank"] = c.o_lora_rank;
  j["sliding_window"] = c.window;
  j["compress_ratios"] = c.compress_ratios;
  j["compress_rope_theta"] = c.compress_rope_theta;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = {{"type", "yarn"},
                       {"factor", c.yarn.factor},
                       {"original_max_position_embeddings", c.yarn.original_max_position},
                       {"beta_fast", c.yarn.beta_fast},
                       {"beta_slow", c.yarn.beta_slow}};
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["index_n_heads"] = c.index_n_heads;
  j["index_head_dim"] = c.index_head_dim;
  j["index_topk"] = c.index_topk;
  j["hc_mult"] = c.hc_mult;
  j["hc_sinkhorn_iters"] = c.hc_sinkhorn_iters;
  j["hc_eps"] = c.hc_eps;
  j["num_hash_layers"] = c.num_hash_layers;
  j["n_routed_experts"] = c.n_routed_experts;
  j["n_shared_experts"] = c.n_shared_experts;
  j["num_experts_per_tok"] = c.experts_per_token;
  j["moe_intermediate_size"] = c.moe_intermediate_size;
  j["routed_scaling_factor"] = c.routed_scaling_factor;
  j["norm_topk_prob"] = c.norm_topk_prob;
  j["scoring_func"] = "sqrtsoftplus";
  j["topk_method"] = "noaux_tc";
  j["swiglu_limit"] = c.swiglu_limit;
  j["hidden_act"] = "silu";
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["num_nextn_predict_layers"] = 0;
  j["tie_word_embeddings"] = false;
  j["bos_token_id"] = c.bos_token_id;
  j["eos_token_id"] = c.eos_token_id;
  j["torch_dtype"] = "bfloat16";
  j["expert_dtype"] = "fp4";
  j["quantization_config"] = {{"activation_scheme", "dynamic"},
                              {"fmt", "e4m3"},
                              {"quant_method", "fp8"},
                              {"scale_fmt", "ue8m0"},
                              {"weight_block_size", {128, 128}}};
  return j.dump(2) + "\n";
}

}  // namespace tessera::dsv4
