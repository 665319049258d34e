// Runtime: everything one model needs to run, assembled from a configuration — the weights, the
// kv-cache format, attention and sampler plugins, the page pools and the model. Owns them all;
// destroy the Runtime after every SequenceKv made from its pools.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "kv/kv_format.hpp"
#include "kv/memory_planner.hpp"
#include "kv/sequence_kv.hpp"
#include "model/dsv4_config.hpp"
#include "model/dsv4_model.hpp"
#include "model/dsv4_weights.hpp"
#include "plugins/registry.hpp"

namespace tessera {

struct RuntimeOptions {
  std::filesystem::path model_dir;
  std::string kv_plugin = "bf16";
  std::string kv_options_json = "{}";
  std::string attention_plugin = "reference";
  std::string attention_options_json = "{}";
  std::string sampler_plugin = "standard";
  std::string sampler_options_json = "{}";
  int64_t page_size = 64;
  double memory_gib = 1.0;
  int64_t max_context = 0;                         // 0: the model's max_position_embeddings
  std::vector<std::filesystem::path> plugin_dirs;  // searched before the default path
  // Linear weights whose values are all bfloat16 (every BF16 / FP8 / FP4 checkpoint's) are kept
  // in bf16 (model/bf16_weights.hpp) where our GEMM reads them (ops::gemm_reads_bf16_weights):
  // same outputs, half their bytes. [model] weight_storage.
  bool linear_weights_in_bf16 = true;
  // model.dtype = "bf16": linear layers whose weight is held in bf16 take bf16-rounded inputs and
  // multiply on AMX tiles or vdpbf16ps (fp32 sums; ops/gemm_nt.hpp); everything else stays fp32.
  // Needs AVX512_BF16.
  bool bf16_activations = false;

  // The parts of a configuration file the runtime needs; model.path is resolved against the
  // working directory, then against the config file's directory.
  static RuntimeOptions from_config(const Config& config);
};

class Runtime {
 public:
  explicit Runtime(const RuntimeOptions& options);
  // Shares the weights of another runtime (A/B arms that differ only in plugins).
  Runtime(const RuntimeOptions& options, std::shared_ptr<const dsv4::ModelWeights> weights);
  // A model given in memory (random weights for benchmarks); options.model_dir is not read.
  Runtime(const RuntimeOptions& options, const dsv4::ModelConfig& config,
          std::shared_ptr<const dsv4::ModelWeights> weights);
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const dsv4::ModelConfig& model_config() const { return model_config_; }
  const std::shared_ptr<const dsv4::ModelWeights>& weights() const { return weights_; }
  dsv4::Model& model() { return *model_; }
  const KvFormat& kv_format() const { return *kv_format_; }
  KvPools& pools() { return *pools_; }
  const KvPlan& kv_plan() const { return plan_; }
  const PluginInstance& sampler() const { return sampler_; }
  const PluginInstance& attention() const { return attention_; }
  PluginRegistry& registry() { return registry_; }
  const RuntimeOptions& options() const { return options_; }

  std::unique_ptr<SequenceKv> new_sequence() {
    return std::make_unique<SequenceKv>(model_config_, *pools_);
  }

 private:
  void build(const dsv4::ModelConfig* config, std::shared_ptr<const dsv4::ModelWeights> weights);

  RuntimeOptions options_;
  PluginRegistry registry_;
  dsv4::ModelConfig model_config_;
  std::shared_ptr<const dsv4::ModelWeights> weights_;
  std::unique_ptr<KvFormat> kv_format_;
  PluginInstance attention_;
  PluginInstance sampler_;
  KvPlan plan_;
  std::unique_ptr<KvPools> pools_;
  std::unique_ptr<dsv4::Model> model_;
};

}  // namespace tessera
