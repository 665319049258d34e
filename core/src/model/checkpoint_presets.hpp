// DeepSeek-V4 shapes by name, for checkpoints made on demand (random_checkpoint.hpp) and for the
// sizing model (bench/sizing_model.hpp): "flash" and "pro" are the released models' widths
// (DSV4.md §1), optionally with fewer layers, routed experts or vocabulary rows so that a reduced
// copy fits a CPU or a CI runner.
#pragma once

#include <cstdint>
#include <string>

#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

struct PresetReduction {
  int64_t layers = 0;   // 0: the model's own (Flash 43, Pro 61)
  int64_t experts = 0;  // routed experts; 0: the model's own (Flash 256, Pro 384)
  int64_t vocab = 0;    // embedding / head rows; 0: 129280
};

// The layer schedule with fewer layers than the release keeps its mix of kinds: layer 0
// window-only, then CSA (ratio 4) and HCA (ratio 128) alternating, as the released schedules do
// after their first layers. The first min(3, layers - 1) layers route by token table, so at
// least one layer routes with the learned router. experts_per_token is min(6, experts).
// Throws tessera::Error for an unknown name or an impossible reduction.
[[nodiscard]] ModelConfig preset_model_config(const std::string& name,
                                              const PresetReduction& reduction = {});

// config.json text for `config` with the official keys (compress_ratios, num_hash_layers, ...)
// and the release's quantisation markers (FP8 e4m3 128x128 UE8M0; FP4 experts).
[[nodiscard]] std::string official_config_json(const ModelConfig& config);

}  // namespace tessera::dsv4
