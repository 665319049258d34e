// config.json -> ModelConfig: the three parity fixtures, legacy keys == modern keys (as
// transformers folds them), precedence between them, and refusals naming the key.
#include "weights/dsv4_config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/check.hpp"

namespace tessera::dsv4 {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kParity = fs::path(TESSERA_SOURCE_DIR) / "tests/data/parity";

// DSV4.md §7 tiny config T, legacy/official keys.
json legacy_t() {
  return json::parse(R"({
    "model_type": "deepseek_v4", "vocab_size": 512, "hidden_size": 64, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 32, "qk_rope_head_dim": 8,
    "q_lora_rank": 32, "o_groups": 2, "o_lora_rank": 16, "sliding_window": 8,
    "compress_ratios": [0, 4, 128, 4, 0], "compress_rope_theta": 160000.0, "rope_theta": 10000.0,
    "rope_scaling": {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536,
                     "beta_fast": 32, "beta_slow": 1},
    "max_position_embeddings": 1048576, "index_n_heads": 2, "index_head_dim": 16,
    "index_topk": 4, "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2,
    "moe_intermediate_size": 32, "num_hash_layers": 2, "scoring_func": "sqrtsoftplus",
    "routed_scaling_factor": 1.5, "swiglu_limit": 10.0, "hc_mult": 4, "hc_sinkhorn_iters": 20,
    "hc_eps": 1e-6, "rms_norm_eps": 1e-6, "hidden_act": "silu", "tie_word_embeddings": false,
    "bos_token_id": 0, "eos_token_id": 1})");
}

// The same model as transformers 5.24 save_pretrained writes it.
json modern_t() {
  json c = legacy_t();
  for (const char* key : {"compress_ratios", "num_hash_layers", "qk_rope_head_dim", "rope_scaling"})
    c.erase(key);
  c["layer_types"] = {"sliding_attention", "compressed_sparse_attention",
                      "heavily_compressed_attention", "compressed_sparse_attention"};
  c["mlp_layer_types"] = {"hash_moe", "hash_moe", "moe", "moe"};
  c["compress_rates"] = {{"compressed_sparse_attention", 4}, {"heavily_compressed_attention", 128}};
  c["partial_rotary_factor"] = 0.25;
  c["rope_parameters"] = json::parse(R"({
    "main": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
    "compress": {"rope_type": "yarn", "factor": 16, "original_max_position_embeddings": 65536,
                 "beta_fast": 32, "beta_slow": 1, "rope_theta": 160000.0, "attention_factor": 1.0,
                 "partial_rotary_factor": 0.25}})");
  return c;
}

ModelConfig parse(const json& j) { return parse_model_config(j.dump(), "cfg.json"); }

std::string error_of(const json& j) {
  try {
    (void)parse(j);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << j.dump();
  return "";
}

void expect_same(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.num_layers, b.num_layers);
  EXPECT_EQ(a.num_heads, b.num_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.rope_dim, b.rope_dim);
  EXPECT_EQ(a.compress_ratios, b.compress_ratios);
  EXPECT_EQ(a.num_hash_layers, b.num_hash_layers);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.compress_rope_theta, b.compress_rope_theta);
  EXPECT_EQ(a.yarn.enabled, b.yarn.enabled);
  EXPECT_EQ(a.yarn.factor, b.yarn.factor);
  EXPECT_EQ(a.yarn.original_max_position, b.yarn.original_max_position);
  EXPECT_EQ(a.yarn.beta_fast, b.yarn.beta_fast);
  EXPECT_EQ(a.yarn.beta_slow, b.yarn.beta_slow);
  EXPECT_EQ(a.eos_token_ids, b.eos_token_ids);
}

TEST(Dsv4Config, ParsesTinyAWithTransformersKeys) {
  const ModelConfig c = load_model_config(kParity / "tiny-a");
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.num_layers, 4);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_EQ(c.q_lora_rank, 32);
  EXPECT_EQ(c.o_groups, 2);
  EXPECT_EQ(c.o_lora_rank, 16);
  EXPECT_EQ(c.window, 8);
  EXPECT_EQ(c.compress_ratios, (std::vector<int64_t>{0, 4, 128, 4}));
  EXPECT_EQ(c.num_hash_layers, 2);
  EXPECT_EQ(c.index_n_heads, 4);
  EXPECT_EQ(c.index_head_dim, 16);
  EXPECT_EQ(c.index_topk, 4);
  EXPECT_EQ(c.n_routed_experts, 4);
  EXPECT_EQ(c.experts_per_token, 2);
  EXPECT_EQ(c.moe_intermediate_size, 32);
  EXPECT_DOUBLE_EQ(c.routed_scaling_factor, 1.5);
  EXPECT_TRUE(c.yarn.enabled);
  EXPECT_DOUBLE_EQ(c.yarn.factor, 16);
  EXPECT_DOUBLE_EQ(c.yarn.original_max_position, 65536);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000);
  EXPECT_DOUBLE_EQ(c.compress_rope_theta, 160000);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{1}));
}

TEST(Dsv4Config, ParsesTinyBAndTinyFp8WithLegacyKeys) {
  const ModelConfig b = load_model_config(kParity / "tiny-b");
  EXPECT_EQ(b.num_layers, 5);
  // compress_ratios carries one trailing MTP entry; it is dropped like transformers does.
  EXPECT_EQ(b.compress_ratios, (std::vector<int64_t>{128, 4, 0, 128, 4}));
  EXPECT_EQ(b.num_hash_layers, 3);
  EXPECT_EQ(b.num_heads, 8);
  EXPECT_EQ(b.o_groups, 4);
  EXPECT_EQ(b.q_lora_rank, 48);
  EXPECT_EQ(b.index_head_dim, 32);
  EXPECT_EQ(b.n_routed_experts, 6);
  EXPECT_EQ(b.experts_per_token, 3);
  EXPECT_DOUBLE_EQ(b.routed_scaling_factor, 2.5);
  EXPECT_TRUE(b.yarn.enabled);
  const ModelConfig f = load_model_config(kParity / "tiny-fp8");
  EXPECT_EQ(f.head_dim, 128);
  EXPECT_EQ(f.rope_dim, 32);
  EXPECT_EQ(f.hidden_size, 128);
  EXPECT_EQ(f.compress_ratios, (std::vector<int64_t>{0, 4, 128, 4}));
}

TEST(Dsv4Config, LegacyAndModernKeysGiveTheSameModel) {
  const ModelConfig legacy = parse(legacy_t());
  const ModelConfig modern = parse(modern_t());
  expect_same(legacy, modern);
  EXPECT_EQ(legacy.compress_ratios, (std::vector<int64_t>{0, 4, 128, 4}));
  EXPECT_EQ(legacy.num_hash_layers, 2);
  EXPECT_EQ(legacy.rope_dim, 8);
  // The older compress_rope_parameters spelling of the same YaRN.
  json older = legacy_t();
  older["compress_rope_parameters"] = older["rope_scaling"];
  older.erase("rope_scaling");
  expect_same(parse(older), legacy);
}

TEST(Dsv4Config, ModernKeysWinAsInTransformers) {
  json c = modern_t();
  c["compress_ratios"] = {128, 128, 128, 128};  // ignored: layer_types is given
  c["num_hash_layers"] = 3;                     // ignored: mlp_layer_types is given
  c["compress_rope_theta"] = 5.0;               // ignored: nested rope_parameters is given
  const ModelConfig m = parse(c);
  EXPECT_EQ(m.compress_ratios, (std::vector<int64_t>{0, 4, 128, 4}));
  EXPECT_EQ(m.num_hash_layers, 2);
  EXPECT_DOUBLE_EQ(m.compress_rope_theta, 160000);
}

TEST(Dsv4Config, DefaultsAndVariants) {
  json c = legacy_t();
  c.erase("rope_scaling");
  c["eos_token_id"] = {1, 2};
  c.erase("num_hash_layers");  // transformers default: 3, clamped to the layer count
  ModelConfig m = parse(c);
  EXPECT_FALSE(m.yarn.enabled);
  EXPECT_EQ(m.eos_token_id, 1);
  EXPECT_EQ(m.eos_token_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(m.num_hash_layers, 3);
  c["num_hidden_layers"] = 2;
  c["compress_ratios"] = {0, 0};
  EXPECT_EQ(parse(c).num_hash_layers, 2);
  c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4}};
  m = parse(c);  // original_max_position_embeddings defaults to max_position / factor
  EXPECT_DOUBLE_EQ(m.yarn.original_max_position, 1048576.0 / 4);
}

TEST(Dsv4Config, RefusalsNameTheKey) {
  const auto expect_error = [](const json& j, const std::string& needle) {
    const std::string err = error_of(j);
    EXPECT_NE(err.find(needle), std::string::npos) << "got: " << err;
    EXPECT_EQ(err.rfind("cfg.json: ", 0), 0u) << err;
  };
  json c = legacy_t();
  c.erase("vocab_size");
  expect_error(c, "key 'vocab_size': is required");
  c = legacy_t(), c["hidden_size"] = "64";
  expect_error(c, "key 'hidden_size': must be an integer, got \"64\"");
  c = modern_t(), c["layer_types"].erase(3);
  expect_error(c, "key 'layer_types': has 3 entries but num_hidden_layers is 4");
  c = modern_t(), c["layer_types"][1] = "global_attention";
  expect_error(c, "unknown layer type 'global_attention'");
  c = modern_t(), c["mlp_layer_types"] = {"moe", "hash_moe", "moe", "moe"};
  expect_error(c, "key 'mlp_layer_types': hash_moe at layer 1 after a moe layer");
  c = legacy_t(), c["compress_ratios"] = {0, 4, 64, 4};
  expect_error(c, "key 'compress_ratios': ratio 64 is not one of 0, 4, 128");
  c = modern_t(), c["compress_rates"]["compressed_sparse_attention"] = 8;
  expect_error(c, "key 'compress_rates': CSA rate 8 is not supported");
  c = modern_t(), c["partial_rotary_factor"] = 0.3;
  expect_error(c, "key 'partial_rotary_factor': times head_dim 32 is 9.6");
  c = modern_t(), c["qk_rope_head_dim"] = 16;
  expect_error(c, "key 'qk_rope_head_dim': 16 disagrees with partial_rotary_factor");
  c = legacy_t(), c["o_groups"] = 3;
  expect_error(c, "key 'o_groups': 3 does not divide num_attention_heads 4");
  c = legacy_t(), c["num_experts_per_tok"] = 5;
  expect_error(c, "key 'num_experts_per_tok': 5 exceeds n_routed_experts 4");
  c = legacy_t(), c["scoring_func"] = "softmax";
  expect_error(c, "key 'scoring_func': 'softmax' is not supported");
  c = legacy_t(), c["model_type"] = "deepseek_v3";
  expect_error(c, "key 'model_type': is 'deepseek_v3'");
  c = legacy_t(), c["eos_token_id"] = {1, 600};
  expect_error(c, "key 'eos_token_id': 600 is outside the vocabulary");
  c = legacy_t(), c["rope_scaling"]["type"] = "linear";
  expect_error(c, "key 'rope_scaling.rope_type': 'linear' is not supported");
  c = legacy_t(), c["tie_word_embeddings"] = true;
  expect_error(c, "key 'tie_word_embeddings'");
  c = legacy_t(), c["qk_rope_head_dim"] = 7;
  expect_error(c, "rope dim 7 must be even");
  c = legacy_t(), c["num_hidden_layers"] = 1000000000;
  expect_error(c, "key 'num_hidden_layers': 1000000000 exceeds 1024");
  c = legacy_t(), c["n_routed_experts"] = 1 << 30;
  expect_error(c, "key 'n_routed_experts': 1073741824 exceeds 4096");
  try {
    (void)parse_model_config("{\"vocab_size\": ", "broken.json");
    ADD_FAILURE() << "accepted broken JSON";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broken.json: not valid JSON"), std::string::npos);
  }
  try {
    (void)load_model_config("/nonexistent/model");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read /nonexistent/model/config.json"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace tessera::dsv4
