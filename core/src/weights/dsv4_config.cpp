// config.json -> ModelConfig. Mirrors transformers' DeepseekV4Config.__post_init__ (5.24): the
// modern keys (layer_types, mlp_layer_types, compress_rates, partial_rotary_factor, nested
// rope_parameters {main, compress}) win over the legacy ones (compress_ratios, compress_rate_csa/
// hca, num_hash_layers, qk_rope_head_dim, rope_scaling, compress_rope_parameters), which are
// folded in the same way. ConfigKeys transformers accepts but ignores are logged, never silently
// reinterpreted; values Tessera cannot run are refused with the key named.
#include "weights/dsv4_config.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "util/check.hpp"
#include "weights/dsv4_config_keys.hpp"

namespace tessera::dsv4 {
namespace {

using nlohmann::json;

// Sanity bounds: the loader plans one entry per layer and expert before it reads any weight, so
// these keep a hostile config from driving a huge allocation (released models: 61 layers, 384
// experts).
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxExperts = 4096;

int64_t attention_rate(const ConfigKeys& keys, const std::string& type, int64_t csa_rate,
                       int64_t hca_rate, std::string_view key) {
  if (type == "sliding_attention") {
    return 0;
  }
  if (type == "compressed_sparse_attention") {
    return csa_rate;
  }
  if (type == "heavily_compressed_attention") {
    return hca_rate;
  }
  keys.fail(key, fmt::format("unknown layer type '{}' (expected sliding_attention, "
                             "compressed_sparse_attention or heavily_compressed_attention)",
                             type));
}

// Per-layer compress ratios: layer_types > compress_ratios > transformers' default schedule.
std::vector<int64_t> read_compress_ratios(const ConfigKeys& keys, int64_t n) {
  int64_t csa = 4, hca = 128;
  if (keys.has("compress_rates")) {
    const ConfigKeys rates = keys.object("compress_rates");
    csa = rates.integer("compressed_sparse_attention", csa);
    hca = rates.integer("heavily_compressed_attention", hca);
  }
  csa = keys.integer("compress_rate_csa", csa);
  hca = keys.integer("compress_rate_hca", hca);
  // The CSA path (overlapping windows, lightning indexer) is defined for m = 4 only.
  if (csa != 4) {
    keys.fail("compress_rates", fmt::format("CSA rate {} is not supported (4)", csa));
  }
  if (hca <= 1 || hca == 4) {
    keys.fail("compress_rates", fmt::format("HCA rate {} must be > 1 and differ from 4", hca));
  }

  std::vector<std::string> types;
  std::string_view from;
  if (keys.has("layer_types")) {
    from = "layer_types";
    for (const auto& t : keys.array("layer_types")) {
      if (!t.is_string()) {
        keys.fail(from, fmt::format("entries must be strings, got {}", t.dump()));
      }
      types.push_back(t.get<std::string>());
    }
  } else if (keys.has("compress_ratios")) {
    from = "compress_ratios";
    for (const auto& r : keys.array("compress_ratios")) {
      const int64_t ratio = keys.to_integer(from, r);
      if (ratio != 0 && ratio != 4 && ratio != 128) {
        keys.fail(from, fmt::format("ratio {} is not one of 0, 4, 128", ratio));
      }
      types.push_back(ratio == 0   ? "sliding_attention"
                      : ratio == 4 ? "compressed_sparse_attention"
                                   : "heavily_compressed_attention");
    }
  } else {
    spdlog::warn(
        "{}: no layer_types / compress_ratios; using transformers' default schedule "
        "(2 x HCA, then alternating) which matches no released model",
        keys.source());
    for (int64_t i = 0; i < n; ++i) {
      types.push_back(i < 2 || (i - 2) % 2 == 0 ? "heavily_compressed_attention"
                                                : "compressed_sparse_attention");
    }
  }
  // Longer lists carry one trailing entry per MTP layer; transformers truncates them.
  if (static_cast<int64_t>(types.size()) < n) {
    keys.fail(from, fmt::format("has {} entries but num_hidden_layers is {}", types.size(), n));
  }
  std::vector<int64_t> ratios;
  for (int64_t i = 0; i < n; ++i) {
    ratios.push_back(attention_rate(keys, types[i], csa, hca, from));
  }
  return ratios;
}

int64_t read_num_hash_layers(const ConfigKeys& keys, int64_t n) {
  if (!keys.has("mlp_layer_types")) {
    return std::min(n, keys.integer("num_hash_layers", 3));
  }
  const json& types = keys.array("mlp_layer_types");
  if (static_cast<int64_t>(types.size()) < n) {
    keys.fail("mlp_layer_types",
              fmt::format("has {} entries but num_hidden_layers is {}", types.size(), n));
  }
  int64_t hash = 0;
  for (int64_t i = 0; i < n; ++i) {
    const json& t = types[static_cast<std::size_t>(i)];
    const bool is_hash = t == "hash_moe";
    if (!is_hash && t != "moe") {
      keys.fail("mlp_layer_types",
                fmt::format("entry {} is {}, expected hash_moe or moe", i, t.dump()));
    }
    if (is_hash && hash != i) {
      keys.fail(
          "mlp_layer_types",
          fmt::format("hash_moe at layer {} after a moe layer: hash layers must come first", i));
    }
    hash += is_hash ? 1 : 0;
  }
  if (keys.has("num_hash_layers") && keys.integer("num_hash_layers") != hash) {
    spdlog::info("config: num_hash_layers={} ignored; mlp_layer_types gives {} hash layers",
                 keys.integer("num_hash_layers"), hash);
  }
  return hash;
}

int64_t read_rope_dim(const ConfigKeys& keys, int64_t head_dim) {
  const bool has_factor = keys.has("partial_rotary_factor");
  const bool has_dim = keys.has("qk_rope_head_dim");
  int64_t rope_dim = head_dim / 8;  // transformers' default factor 64/512
  if (has_factor) {
    const double exact = keys.number("partial_rotary_factor", 0) * static_cast<double>(head_dim);
    rope_dim = static_cast<int64_t>(std::llround(exact));
    if (std::abs(exact - static_cast<double>(rope_dim)) > 1e-6) {
      keys.fail("partial_rotary_factor",
                fmt::format("times head_dim {} is {}, not an integer", head_dim, exact));
    }
  }
  if (has_dim) {
    const int64_t legacy = keys.integer("qk_rope_head_dim");
    if (has_factor && legacy != rope_dim) {
      keys.fail("qk_rope_head_dim", fmt::format("{} disagrees with partial_rotary_factor x "
                                                "head_dim = {}",
                                                legacy, rope_dim));
    }
    rope_dim = legacy;
  }
  return rope_dim;
}

// YaRN parameters for the compressed layers, from the first place that defines the compress
// rope: rope_parameters.compress (nested, what transformers 5.x writes), rope_scaling (which
// transformers merges over a flat rope_parameters), the older compress_rope_parameters (same
// meaning; transformers 5.24 no longer reads it), then a flat rope_parameters.
YarnScaling read_yarn(const ConfigKeys& keys, int64_t max_positions) {
  std::optional<ConfigKeys> src;
  const bool nested =
      keys.is_object("rope_parameters") && keys.object("rope_parameters").is_object("compress");
  if (nested) {
    src.emplace(keys.object("rope_parameters").object("compress"));
  } else if (keys.is_object("rope_scaling")) {
    src.emplace(keys.object("rope_scaling"));
  } else if (keys.is_object("compress_rope_parameters")) {
    spdlog::info("{}: using legacy compress_rope_parameters for the compressed layers' RoPE",
                 keys.source());
    src.emplace(keys.object("compress_rope_parameters"));
  } else if (keys.is_object("rope_parameters")) {
    src.emplace(keys.object("rope_parameters"));
  }
  YarnScaling yarn;
  if (!src) {
    return yarn;
  }
  const std::string type = src->string("rope_type", src->string("type", "default"));
  if (type == "default") {
    return yarn;
  }
  if (type != "yarn") {
    src->fail("rope_type", fmt::format("'{}' is not supported (yarn)", type));
  }
  yarn.enabled = true;
  yarn.factor = src->number("factor", 0);
  if (!(yarn.factor > 0)) {
    src->fail("factor", "yarn needs a positive factor");
  }
  yarn.original_max_position = src->number("original_max_position_embeddings",
                                           static_cast<double>(max_positions) / yarn.factor);
  yarn.beta_fast = src->number("beta_fast", 32);
  yarn.beta_slow = src->number("beta_slow", 1);
  if (!(yarn.original_max_position > 0)) {
    src->fail("original_max_position_embeddings", "must be positive");
  }
  if (const double af = src->number("attention_factor", 1.0); af != 1.0) {
    spdlog::warn("config: attention_factor {} ignored: DeepSeek-V4 applies no YaRN mscale", af);
  }
  return yarn;
}

void read_rope(const ConfigKeys& keys, ModelConfig& c) {
  c.rope_theta = keys.number("rope_theta", 10000);
  c.compress_rope_theta = keys.number("compress_rope_theta", 160000);
  if (keys.is_object("rope_parameters")) {
    const ConfigKeys rp = keys.object("rope_parameters");
    // transformers uses a nested {main, compress} dict as given, over the top-level thetas.
    if (rp.is_object("main")) {
      const ConfigKeys main = rp.object("main");
      const std::string type = main.string("rope_type", main.string("type", "default"));
      if (type != "default") {
        main.fail("rope_type", fmt::format("'{}' is not supported for sliding layers", type));
      }
      c.rope_theta = main.number("rope_theta", c.rope_theta);
    }
    if (rp.is_object("compress")) {
      c.compress_rope_theta = rp.object("compress").number("rope_theta", c.compress_rope_theta);
    }
  }
  c.yarn = read_yarn(keys, c.max_position_embeddings);
}

void read_token_ids(const ConfigKeys& keys, ModelConfig& c) {
  c.bos_token_id = keys.integer("bos_token_id", 0);
  c.eos_token_ids.clear();
  if (const json* eos = keys.find("eos_token_id"); eos != nullptr && eos->is_array()) {
    for (const auto& id : *eos) {
      c.eos_token_ids.push_back(keys.to_integer("eos_token_id", id));
    }
    if (c.eos_token_ids.empty()) {
      keys.fail("eos_token_id", "is an empty list");
    }
  } else {
    c.eos_token_ids.push_back(keys.integer("eos_token_id", 1));
  }
  c.eos_token_id = c.eos_token_ids.front();
}

void check_unsupported(const ConfigKeys& keys) {
  if (const auto type = keys.string("model_type", "deepseek_v4"); type != "deepseek_v4") {
    keys.fail("model_type", fmt::format("is '{}', expected 'deepseek_v4'", type));
  }
  if (const auto f = keys.string("scoring_func", "sqrtsoftplus"); f != "sqrtsoftplus") {
    keys.fail("scoring_func", fmt::format("'{}' is not supported (sqrtsoftplus)", f));
  }
  if (const auto act = keys.string("hidden_act", "silu"); act != "silu") {
    keys.fail("hidden_act", fmt::format("'{}' is not supported (silu)", act));
  }
  if (keys.boolean("tie_word_embeddings", false)) {
    keys.fail("tie_word_embeddings", "true is not supported (DeepSeek-V4 has a separate head)");
  }
  if (keys.integer("n_shared_experts", 1) != 1) {
    keys.fail("n_shared_experts", "DeepSeek-V4 has exactly one shared expert");
  }
  if (keys.integer("num_key_value_heads", 1) != 1) {
    spdlog::warn("config: num_key_value_heads={} ignored: DeepSeek-V4 has one shared K=V head",
                 keys.integer("num_key_value_heads"));
  }
  if (keys.integer("first_k_dense_replace", 0) != 0) {
    spdlog::warn("config: first_k_dense_replace ignored: every DeepSeek-V4 layer is MoE");
  }
}

void check_ranges(const ConfigKeys& keys, const ModelConfig& c) {
  auto positive = [&](std::string_view key, int64_t v) {
    if (v <= 0) {
      keys.fail(key, fmt::format("must be positive, got {}", v));
    }
  };
  positive("vocab_size", c.vocab_size);
  positive("hidden_size", c.hidden_size);
  positive("num_hidden_layers", c.num_layers);
  positive("num_attention_heads", c.num_heads);
  positive("head_dim", c.head_dim);
  positive("q_lora_rank", c.q_lora_rank);
  positive("o_groups", c.o_groups);
  positive("o_lora_rank", c.o_lora_rank);
  positive("sliding_window", c.window);
  positive("max_position_embeddings", c.max_position_embeddings);
  positive("index_n_heads", c.index_n_heads);
  positive("index_head_dim", c.index_head_dim);
  positive("index_topk", c.index_topk);
  positive("hc_mult", c.hc_mult);
  positive("hc_sinkhorn_iters", c.hc_sinkhorn_iters);
  positive("n_routed_experts", c.n_routed_experts);
  positive("num_experts_per_tok", c.experts_per_token);
  positive("moe_intermediate_size", c.moe_intermediate_size);
  if (c.num_layers > kMaxLayers) {
    keys.fail("num_hidden_layers", fmt::format("{} exceeds {}", c.num_layers, kMaxLayers));
  }
  if (c.n_routed_experts > kMaxExperts) {
    keys.fail("n_routed_experts", fmt::format("{} exceeds {}", c.n_routed_experts, kMaxExperts));
  }
  if (c.rope_dim <= 0 || c.rope_dim % 2 != 0 || c.rope_dim > c.head_dim ||
      c.rope_dim > c.index_head_dim) {
    keys.fail("qk_rope_head_dim",
              fmt::format("rope dim {} must be even, positive and <= head_dim {} and "
                          "index_head_dim {}",
                          c.rope_dim, c.head_dim, c.index_head_dim));
  }
  if (c.num_heads % c.o_groups != 0) {
    keys.fail("o_groups",
              fmt::format("{} does not divide num_attention_heads {}", c.o_groups, c.num_heads));
  }
  if (c.experts_per_token > c.n_routed_experts) {
    keys.fail("num_experts_per_tok", fmt::format("{} exceeds n_routed_experts {}",
                                                 c.experts_per_token, c.n_routed_experts));
  }
  if (c.num_hash_layers < 0) {
    keys.fail("num_hash_layers", "must not be negative");
  }
  if (!(c.rms_norm_eps > 0)) {
    keys.fail("rms_norm_eps", "must be positive");
  }
  if (!(c.hc_eps >= 0)) {
    keys.fail("hc_eps", "must not be negative");
  }
  if (!(c.swiglu_limit >= 0)) {
    keys.fail("swiglu_limit", "must not be negative (0 = no clamp)");
  }
  if (!(c.routed_scaling_factor > 0)) {
    keys.fail("routed_scaling_factor", "must be positive");
  }
  if (!(c.rope_theta > 0)) {
    keys.fail("rope_theta", "must be positive");
  }
  if (!(c.compress_rope_theta > 0)) {
    keys.fail("compress_rope_theta", "must be positive");
  }
  if (c.bos_token_id < 0 || c.bos_token_id >= c.vocab_size) {
    keys.fail("bos_token_id", fmt::format("{} is outside the vocabulary", c.bos_token_id));
  }
  for (int64_t id : c.eos_token_ids) {
    if (id < 0 || id >= c.vocab_size) {
      keys.fail("eos_token_id", fmt::format("{} is outside the vocabulary", id));
    }
  }
}

}  // namespace

ModelConfig parse_model_config(const std::string& json_text, const std::string& source_name) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", source_name, e.what()));
  }
  if (!root.is_object()) {
    throw Error(fmt::format("{}: expected a JSON object", source_name));
  }
  const ConfigKeys keys(root, source_name);
  check_unsupported(keys);

  ModelConfig c;
  c.vocab_size = keys.integer("vocab_size");
  c.hidden_size = keys.integer("hidden_size");
  c.num_layers = keys.integer("num_hidden_layers");
  c.num_heads = keys.integer("num_attention_heads");
  c.head_dim = keys.integer("head_dim", 512);
  c.q_lora_rank = keys.integer("q_lora_rank", 1024);
  c.o_groups = keys.integer("o_groups", 8);
  c.o_lora_rank = keys.integer("o_lora_rank", 1024);
  c.window = keys.integer("sliding_window", 128);
  c.max_position_embeddings = keys.integer("max_position_embeddings", 1048576);
  c.index_n_heads = keys.integer("index_n_heads", 64);
  c.index_head_dim = keys.integer("index_head_dim", 128);
  c.index_topk = keys.integer("index_topk", 512);
  c.hc_mult = keys.integer("hc_mult", 4);
  c.hc_sinkhorn_iters = keys.integer("hc_sinkhorn_iters", 20);
  c.hc_eps = keys.number("hc_eps", 1e-6);
  // attribute_map aliases: num_local_experts -> n_routed_experts,
  // intermediate_size -> moe_intermediate_size (only when the V4 key is absent).
  c.n_routed_experts = keys.integer("n_routed_experts", keys.integer("num_local_experts", 256));
  c.n_shared_experts = keys.integer("n_shared_experts", 1);
  c.experts_per_token = keys.integer("num_experts_per_tok", 6);
  c.moe_intermediate_size =
      keys.integer("moe_intermediate_size", keys.integer("intermediate_size", 2048));
  c.routed_scaling_factor = keys.number("routed_scaling_factor", 1.5);
  c.norm_topk_prob = keys.boolean("norm_topk_prob", true);
  c.swiglu_limit = keys.number("swiglu_limit", 10.0);
  c.rms_norm_eps = keys.number("rms_norm_eps", 1e-6);
  c.rope_dim = read_rope_dim(keys, c.head_dim);
  read_token_ids(keys, c);
  if (c.num_layers > 0 && c.num_layers <= kMaxLayers) {
    c.compress_ratios = read_compress_ratios(keys, c.num_layers);
    c.num_hash_layers = read_num_hash_layers(keys, c.num_layers);
  }
  read_rope(keys, c);
  check_ranges(keys, c);
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& model_dir) {
  const auto path = model_dir / "config.json";
  std::ifstream in(path, std::ios::binary);
  TS_CHECK(in.good(), "cannot read {} (a model directory needs config.json)", path.string());
  std::stringstream text;
  text << in.rdbuf();
  return parse_model_config(text.str(), path.string());
}

}  // namespace tessera::dsv4
