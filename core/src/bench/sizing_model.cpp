#include "bench/sizing_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kv/compressor_rings.hpp"
#include "model/dsv4_tensor_names.hpp"
#include "model/dsv4_weight_plan.hpp"
#include "model/official_formats.hpp"
#include "util/check.hpp"
#include "weights/safetensors.hpp"

namespace tessera::bench {
namespace {

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

uint64_t product(const std::vector<int64_t>& shape) {
  return static_cast<uint64_t>(
      std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()));
}

// The attention entries one query reads in `layer` and the indexer keys it scores.
struct LayerReads {
  double entries = 0;
  double index_keys = 0;
};

LayerReads layer_reads(const dsv4::ModelConfig& c, int64_t layer, int64_t context) {
  const double ctx = static_cast<double>(context);
  LayerReads r;
  r.entries = std::min(ctx, static_cast<double>(c.window));
  const int64_t m = c.compress_ratio(layer);
  if (m == 4) {
    r.entries += std::min(static_cast<double>(c.index_topk), std::floor(ctx / 4));
    r.index_keys = std::floor(ctx / 4);
  } else if (m > 0) {
    r.entries += std::floor(ctx / static_cast<double>(m));
  }
  return r;
}

}  // namespace

TensorRole role_of(const std::string& n) {
  if (n == "embed.weight" || has(n, "tid2eid")) return TensorRole::RowsRead;
  if (n.rfind("head.", 0) == 0) return TensorRole::Head;
  if (has(n, ".experts.")) return TensorRole::RoutedExpert;
  if (has(n, ".attn.wq_b.") || has(n, "attn_sink") || has(n, ".attn.wo_a.") ||
      has(n, ".attn.wo_b.") || has(n, "shared_experts.")) {
    return TensorRole::Sharded;
  }
  return TensorRole::Replicated;
}

ModelFootprint footprint_of_config(const dsv4::ModelConfig& config, WeightFormat format,
                                   std::string source) {
  ModelFootprint f{config, {}, std::move(source), format == WeightFormat::Official};
  dsv4::ModelWeights shapes;  // shaped by the plan only
  for (const auto& spec : dsv4::plan_model_tensors(config, shapes)) {
    TensorFootprint t;
    t.name = spec.name;
    t.role = role_of(spec.name);
    t.params = product(spec.shape);
    t.rows = spec.shape.empty() ? 1 : spec.shape[0];
    const bool linear =
        spec.kind == dsv4::StorageKind::Linear || spec.kind == dsv4::StorageKind::RoutedExpert;
    switch (format) {
      case WeightFormat::Official:
        t.bytes = dsv4::official_bytes(spec);
        break;
      case WeightFormat::F32:
      case WeightFormat::Bf16:
        t.bytes = t.params * (spec.kind == dsv4::StorageKind::TokenTable ? 4
                              : linear && format == WeightFormat::Bf16   ? 2
                                                                         : 4);
        break;
    }
    f.tensors.push_back(std::move(t));
  }
  return f;
}

ModelFootprint footprint_of_checkpoint(const std::filesystem::path& dir) {
  ModelFootprint f{dsv4::load_model_config(dir), {}, dir.string(), false};
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".safetensors") continue;
    const auto file = weights::SafetensorsFile::open(entry.path());
    for (const auto& info : file.tensors()) {
      if (info.name.rfind("mtp.", 0) == 0) continue;  // the MTP block is not run by decode
      TensorFootprint t;
      t.name = dsv4::official_tensor_name(info.name);  // transformers / save_pretrained names too
      t.role = role_of(t.name);
      t.bytes = info.byte_size();
      const bool packed_fp4 =
          info.dtype == weights::DType::I8 && t.role == TensorRole::RoutedExpert;
      t.params = info.dtype == weights::DType::F8_E8M0
                     ? 0
                     : static_cast<uint64_t>(info.numel()) * (packed_fp4 ? 2 : 1);
      t.rows = info.shape.empty() ? 1 : info.shape[0];
      f.fp8_compute = f.fp8_compute || info.dtype == weights::DType::F8_E4M3;
      f.tensors.push_back(std::move(t));
    }
  }
  TS_CHECK(!f.tensors.empty(), "{}: no *.safetensors tensors", dir.string());
  return f;
}

double expected_distinct_experts(int64_t experts, int64_t per_token, int64_t batch) {
  const double e = static_cast<double>(experts);
  return e * (1.0 - std::pow(1.0 - static_cast<double>(per_token) / e, static_cast<double>(batch)));
}

double kv_bytes_per_sequence(const dsv4::ModelConfig& c, const SizingOptions& o) {
  double entries = 0;
  for (int64_t l = 0; l < c.num_layers; ++l) entries += layer_reads(c, l, o.context).entries;
  return entries * o.kv_entry_bytes;
}

double index_bytes_per_sequence(const dsv4::ModelConfig& c, const SizingOptions& o) {
  double keys = 0;
  for (int64_t l = 0; l < c.num_layers; ++l) keys += layer_reads(c, l, o.context).index_keys;
  return keys * o.index_entry_bytes;
}

double resident_weight_bytes(const ModelFootprint& model, const SizingOptions& o) {
  double bytes = 0;
  for (const auto& t : model.tensors) {
    const bool split = t.role == TensorRole::Sharded || t.role == TensorRole::Head ||
                       t.role == TensorRole::RoutedExpert;
    bytes += static_cast<double>(t.bytes) / (split ? o.ranks : 1);
  }
  return bytes;
}

double kv_bytes_stored_per_sequence(const dsv4::ModelConfig& c, const SizingOptions& o) {
  const double ctx = static_cast<double>(o.context);
  double bytes = 0;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    bytes += std::min(ctx, static_cast<double>(c.window)) * o.kv_entry_bytes;
    const int64_t m = c.compress_ratio(l);
    if (m > 0) bytes += std::floor(ctx / static_cast<double>(m)) * o.kv_entry_bytes;
    if (m == 4) bytes += std::floor(ctx / 4) * o.index_entry_bytes;
  }
  return bytes;
}

double compressor_state_bytes_per_sequence(const dsv4::ModelConfig& c) {
  return static_cast<double>(CompressorRings::bytes(c, 1));  // as much on the host
}

StepCost decode_step_cost(const ModelFootprint& model, const SizingOptions& o,
                          const HardwareFigures& hw, int64_t batch) {
  const dsv4::ModelConfig& c = model.config;
  const double n = o.ranks, b = static_cast<double>(batch);
  TS_CHECK(o.ranks >= 1 && batch >= 1, "ranks {} and batch {} must be positive", o.ranks, batch);
  if (o.experts == ExpertSplit::ExpertParallel) {
    TS_CHECK(c.n_routed_experts % o.ranks == 0, "EP: {} experts do not split over {} ranks",
             c.n_routed_experts, o.ranks);
  }
  StepCost s;
  s.batch = batch;
  s.experts_touched_per_layer =
      expected_distinct_experts(c.n_routed_experts, c.experts_per_token, batch);
  // Routed experts: the average bytes of one expert (all layers together) times the distinct
  // experts touched, split over the ranks. TP: 1/N of each touched expert per rank; EP: E/N
  // experts per rank, of which (E/N)(1 - (1-k/E)^B) are touched: the same average.
  double expert_bytes = 0, expert_params = 0, linear_params = 0;
  for (const auto& t : model.tensors) {
    const double bytes = static_cast<double>(t.bytes), params = static_cast<double>(t.params);
    switch (t.role) {
      case TensorRole::Replicated:
        s.replicated_bytes += bytes;
        linear_params += params;
        break;
      case TensorRole::Sharded:
        s.sharded_bytes += bytes / n;
        linear_params += params / n;
        break;
      case TensorRole::Head:
        s.head_bytes += bytes / n;
        linear_params += params / n;
        break;
      case TensorRole::RoutedExpert:
        expert_bytes += bytes;
        expert_params += params;
        break;
      case TensorRole::RowsRead:
        s.rows_bytes +=
            bytes / static_cast<double>(t.rows) * std::min(b, static_cast<double>(t.rows));
        break;
    }
  }
  const double experts = static_cast<double>(c.n_routed_experts);
  s.expert_bytes = expert_bytes / experts * s.experts_touched_per_layer / n;
  s.kv_bytes = b * kv_bytes_per_sequence(c, o);
  s.index_bytes = b * index_bytes_per_sequence(c, o);

  // FLOPs: 2 per weight per token; each token runs k experts; attention QK^T and PV over the
  // entries read with this rank's heads; the indexer scores every key with all its heads.
  double attention_flops = 0;
  const double local_heads = std::ceil(static_cast<double>(c.num_heads) / n);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const LayerReads r = layer_reads(c, l, o.context);
    attention_flops += 4 * local_heads * static_cast<double>(c.head_dim) * r.entries +
                       2 * static_cast<double>(c.index_n_heads * c.index_head_dim) * r.index_keys;
  }
  s.flops = b * (2 * linear_params +
                 2 * expert_params / experts * static_cast<double>(c.experts_per_token) / n +
                 attention_flops);

  // Collectives: an all-reduce after wo_b and one after the MoE in every layer, an all-gather of
  // the logits. Ring: all-reduce moves 2(N-1)/N of the payload per rank, all-gather (N-1)/N.
  if (o.ranks > 1) {
    s.collectives = static_cast<int>(2 * c.num_layers + 1);
    s.all_reduce_bytes = b * static_cast<double>(c.hidden_size) * o.activation_bytes;
    s.all_gather_bytes = b * static_cast<double>(c.vocab_size) * o.logit_bytes;
    const double link = hw.link_gbps * 1e9;
    s.collective_s =
        s.collectives * hw.collective_latency_us * 1e-6 +
        2.0 * static_cast<double>(c.num_layers) * 2 * (n - 1) / n * s.all_reduce_bytes / link +
        (n - 1) / n * s.all_gather_bytes / link;
  }
  s.memory_s = s.bytes() / (hw.memory_gbps * 1e9);
  s.compute_s = s.flops / ((model.fp8_compute ? hw.dense_fp8_tflops : hw.dense_bf16_tflops) * 1e12);
  return s;
}

}  // namespace tessera::bench
