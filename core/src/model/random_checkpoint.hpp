// A random DeepSeek-V4 checkpoint in the official format (config.json + model.safetensors with
// official names and storage formats, model/official_formats.hpp) for any ModelConfig — e.g. the
// Flash widths of model/checkpoint_presets.hpp — written tensor by tensor, a batch of row blocks
// (~16 MiB of output) at a time, so host memory stays small whatever the checkpoint's size. The
// blocks of a batch are drawn and encoded on ops::compute_threads() threads; the file is the same
// for any thread count.
//
// Values: projections ~ N(0, 1/fan_in) before quantisation (activations keep their scale and the
// logits are not flat), the embedding ~ N(0, 1), norms 1, small mHC and routing tensors, distinct
// expert ids in every tid2eid row. The normal draws are Irwin-Hall sums of four uniforms (fast;
// tails bounded at 3.5 sigma), from SplitMix64 streams seeded by (`seed`, tensor, row block).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

struct CheckpointWriteProgress {
  uint64_t bytes_written = 0;
  uint64_t bytes_total = 0;
  std::string tensor;  // the tensor being written
};

// Creates `dir` if needed and writes config.json and model.safetensors there. `progress` (may be
// empty) is called after every tensor. Returns the bytes of model.safetensors.
uint64_t write_random_checkpoint(
    const ModelConfig& config, const std::filesystem::path& dir, uint64_t seed,
    const std::function<void(const CheckpointWriteProgress&)>& progress = {});

}  // namespace tessera::dsv4
