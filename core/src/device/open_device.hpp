// Opens the device a rank computes on, from `[executor] device` and `cuda_module`: the cpu, or a
// CUDA device through the GPU's module (cuda_module = "native") or the SIMT emulator's
// ("emulated"; any other value is a module file's path). CUDA code is loaded here and only here,
// and only when a CUDA device is asked for.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "device/device.hpp"

namespace tessera::device {

struct DeviceSpec {
  std::string type = "cpu";            // "cpu" | "cuda"
  int ordinal = 0;                     // which CUDA device
  std::string cuda_module = "native";  // "native" | "emulated" | a path
};

// Where the module file for `cuda_module` is looked for, in order: beside the executable, in
// ../lib/tessera from it (an installed tree or a bundle), the build tree, the install prefix.
std::vector<std::string> cuda_module_candidates(const std::string& cuda_module);

// Throws std::runtime_error naming the device, what was needed and what was found: a missing
// module (with the loader's reason and the places looked in), no CUDA device, an ordinal the
// module does not have.
std::unique_ptr<Device> open_device(const DeviceSpec& spec);

}  // namespace tessera::device
