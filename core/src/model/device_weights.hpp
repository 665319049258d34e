// A DeepSeek-V4 checkpoint placed in a device's memory in its stored formats (GPU.md: nothing
// is expanded): BF16 stays BF16, F32 stays F32, FP8 e4m3 with its UE8M0 128x128 block scales and
// FP4 e2m1 experts with their per-32 UE8M0 scales as stored; the kernels decode them in
// registers (device_ops.hpp). The checkpoint is checked against the config first, exactly as
// the CPU loader does (checkpoint_check.hpp), then streamed tensor by tensor from the mmap'd
// safetensors straight into device memory: host memory during the upload stays near one
// tensor. The token table of hash layers is the one exception: its I64 ids become int32.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "model/device_shard.hpp"
#include "weights/dsv4_config.hpp"
#include "weights/dtype.hpp"

namespace tessera::dsv4 {

struct DeviceTensor {
  weights::DType dtype = weights::DType::F32;  // as stored (I32 for the token table)
  std::vector<int64_t> shape;                  // as stored
  device::DeviceBuffer data;
  // The FP8 / FP4 scale tensor (F8_E8M0, or F32 for FP8), when the weight has one.
  weights::DType scale_dtype = weights::DType::F32;
  std::vector<int64_t> scale_shape;
  device::DeviceBuffer scale;
};

struct DeviceModelWeights {
  std::map<std::string, DeviceTensor, std::less<>> tensors;  // by official name
  uint64_t bytes = 0;                                        // device bytes placed
  [[nodiscard]] const DeviceTensor* find(std::string_view name) const {
    const auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  }
};

// Throws tessera::Error naming every problem of the checkpoint, or the device's message (with
// the bytes asked for and free) when memory runs out. Logs the bytes placed and the rate.
// `share`: a tensor-parallel rank's part (model/device_shard.hpp): only that part of each split
// tensor is read and placed. `reserve_bytes`: what the rank will allocate next (its kv pool);
// when the share plus the reserve exceed the device's free memory, the upload is refused before
// anything is placed, with the bytes needed and free.
[[nodiscard]] DeviceModelWeights upload_model_weights(
    device::Device& device, const device::Stream& stream, const std::filesystem::path& model_dir,
    const ModelConfig& config, RankShare share = {}, uint64_t reserve_bytes = 0);

}  // namespace tessera::dsv4
