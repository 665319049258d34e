// A single-rank device engine for the device forward's tests (model/device_model.hpp): weights
// placed on a backend (cpu, emulated or cuda), plugins created for it, pools in its memory.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device/cpu_device.hpp"
#include "device/open_device.hpp"
#include "model/device_model.hpp"
#include "model/device_weights.hpp"
#include "parity_fixture.hpp"
#include "plugins/registry.hpp"
#include "runtime/rank_kv.hpp"

namespace tessera {

// Token ids for tests: i * stride + seed, i < n.
inline std::vector<int32_t> synthetic_prompt(int64_t n, int32_t seed, int32_t stride = 37) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ids[static_cast<size_t>(i)] = static_cast<int32_t>(i * stride + seed);
  }
  return ids;
}

inline std::unique_ptr<device::Device> open_backend(const std::string& name) {
  if (name == "cpu") return std::make_unique<device::CpuDevice>();
  return device::open_device({"cuda", 0, name});
}

// A single-rank device engine: weights placed on the device, plugins created for it, pools in
// its memory, the device forward.
struct DeviceEngine {
  DeviceEngine(const std::string& backend, const RuntimeOptions& options)
      : DeviceEngine(open_backend(backend), options) {}
  DeviceEngine(std::unique_ptr<device::Device> on, const RuntimeOptions& options)
      : device(std::move(on)),
        stream(device->create_stream()),
        config(dsv4::load_model_config(options.model_dir)),
        weights(dsv4::upload_model_weights(*device, stream, options.model_dir, config)),
        view(dsv4::view_device_weights(weights, config, *device, stream)) {
    registry.discover(options.plugin_dirs);
    kv = create_rank_kv(registry, options, config, device.get(), &stream);
    model = std::make_unique<dsv4::DeviceModel>(config, view, *device, stream, *kv.format,
                                                kv.attention, *kv.pools);
  }
  std::unique_ptr<SequenceKv> new_sequence() {
    return std::make_unique<SequenceKv>(config, *kv.pools);
  }

  std::unique_ptr<device::Device> device;
  device::Stream stream;
  dsv4::ModelConfig config;
  dsv4::DeviceModelWeights weights;
  dsv4::DeviceModelView view;
  PluginRegistry registry;
  RankKv kv;
  std::unique_ptr<dsv4::DeviceModel> model;
};

}  // namespace tessera
