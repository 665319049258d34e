// Runtime: everything one model needs to run, assembled from a configuration — the weights, the
// kv-cache format, attention and sampler plugins, the page pools and the model. Owns them all;
// destroy the Runtime after every SequenceKv made from its pools.
//
// With options.device = "cuda" it opens the device (options.cuda_module), places the checkpoint
// on it in its stored formats, creates the kv format and attention plugin for it with the pages
// in its memory, and runs the device forward (model/device_model.hpp); weights() is then null
// (no host copy of the model). The sampler stays on the host.
#pragma once

#include <memory>

#include "device/device.hpp"
#include "kv/kv_format.hpp"
#include "kv/memory_planner.hpp"
#include "kv/sequence_kv.hpp"
#include "model/device_model.hpp"
#include "model/device_weight_views.hpp"
#include "model/dsv4_model.hpp"
#include "model/dsv4_weights.hpp"
#include "plugins/registry.hpp"
#include "runtime/rank_kv.hpp"
#include "runtime/runtime_options.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera {

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
  dsv4::ForwardModel& model() { return *model_; }
  bool on_device() const { return device_ != nullptr; }
  const KvFormat& kv_format() const { return *kv_.format; }
  KvPools& pools() { return *kv_.pools; }
  const KvPlan& kv_plan() const { return kv_.plan; }
  const PluginInstance& sampler() const { return sampler_; }
  const PluginInstance& attention() const { return kv_.attention; }
  PluginRegistry& registry() { return registry_; }
  const RuntimeOptions& options() const { return options_; }

  std::unique_ptr<SequenceKv> new_sequence() {
    return std::make_unique<SequenceKv>(model_config_, *kv_.pools);
  }

 private:
  void build(const dsv4::ModelConfig* config, std::shared_ptr<const dsv4::ModelWeights> weights);

  void build_on_device();
  void log_summary() const;

  RuntimeOptions options_;
  std::unique_ptr<device::Device> device_;  // device = "cuda" only; outlives all below
  device::Stream stream_;
  PluginRegistry registry_;
  dsv4::ModelConfig model_config_;
  std::shared_ptr<const dsv4::ModelWeights> weights_;
  std::unique_ptr<dsv4::DeviceModelWeights> device_weights_;
  std::unique_ptr<dsv4::DeviceModelView> device_view_;
  RankKv kv_;  // rank 0's (the Executor creates the other ranks')
  PluginInstance sampler_;
  std::unique_ptr<dsv4::ForwardModel> model_;
};

}  // namespace tessera
