// Runtime: everything one model needs to run, assembled from a configuration — the weights, the
// kv-cache format, attention and sampler plugins, the page pools and the model. Owns them all;
// destroy the Runtime after every SequenceKv made from its pools.
//
// Under the device forward (options.device = "cuda", or "cpu" with executor.cpu_forward =
// "device": the device layer's cpu backend) it opens the device (options.cuda_module), places the
// checkpoint on it in its stored formats, creates the kv format and attention plugin for it with
// the pages in its memory, and runs the device forward (model/device_model.hpp); weights() is
// then null (no host copy of the model in the host forward's formats). The sampler stays on the
// host.
//
// A/B arms differ in plugins, never in the model: an arm's Runtime is built on another's
// shared_model(), the weights in host memory or, on a device, the device with the checkpoint
// placed on it; each arm keeps its own stream, plugins and page pools.
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

// A checkpoint placed on a device in its stored formats, with the device it lives on (members are
// destroyed view, weights, device).
struct DeviceResidentModel {
  std::unique_ptr<device::Device> device;
  std::unique_ptr<dsv4::DeviceModelWeights> weights;
  std::unique_ptr<dsv4::DeviceModelView> view;
};

// What one Runtime lends another: its weights for the host forward, or on its device.
struct SharedModel {
  std::shared_ptr<const dsv4::ModelWeights> host;
  std::shared_ptr<const DeviceResidentModel> device;
};

class Runtime {
 public:
  explicit Runtime(const RuntimeOptions& options);
  // Shares the model of another runtime (A/B arms that differ only in plugins); the device and
  // the choice of forward must be the same.
  Runtime(const RuntimeOptions& options, SharedModel shared);
  // A model given in memory (random weights for benchmarks); options.model_dir is not read.
  Runtime(const RuntimeOptions& options, const dsv4::ModelConfig& config,
          std::shared_ptr<const dsv4::ModelWeights> weights);
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const dsv4::ModelConfig& model_config() const { return model_config_; }
  const std::shared_ptr<const dsv4::ModelWeights>& weights() const { return weights_; }
  SharedModel shared_model() const { return {weights_, on_device_}; }
  dsv4::ForwardModel& model() { return *model_; }
  // The device forward (rank 0's share under tensor parallelism); null under the host forward.
  dsv4::DeviceModel* device_model() { return on_device_ ? device_model_ : nullptr; }
  bool on_device() const { return on_device_ != nullptr; }
  // The device forward's device and this runtime's stream (null / an empty stream under the host
  // forward).
  device::Device* device() const { return on_device_ ? on_device_->device.get() : nullptr; }
  const device::Stream& stream() const { return stream_; }
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

  void build_on_device(std::shared_ptr<const DeviceResidentModel> shared);
  void log_summary() const;

  RuntimeOptions options_;
  // The device forward's only (possibly another arm's); its device outlives all below
  std::shared_ptr<const DeviceResidentModel> on_device_;
  device::Stream stream_;
  PluginRegistry registry_;
  dsv4::ModelConfig model_config_;
  std::shared_ptr<const dsv4::ModelWeights> weights_;
  RankKv kv_;  // rank 0's (the Executor creates the other ranks')
  PluginInstance sampler_;
  std::unique_ptr<dsv4::ForwardModel> model_;
  dsv4::DeviceModel* device_model_ = nullptr;  // model_, when it runs on the device
};

}  // namespace tessera
