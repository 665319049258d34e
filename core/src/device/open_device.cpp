#include "device/open_device.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "device/cpu_device.hpp"
#include "device/cuda_build.hpp"
#include "device/cuda_device.hpp"
#include "device_module.hpp"
#include "tessera/plugin_abi.h"

namespace tessera::device {
namespace {

std::filesystem::path executable_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

std::string module_file(const std::string& cuda_module) {
  if (cuda_module == "native") return "libtessera_cuda.so";
  if (cuda_module == "emulated") return "libtessera_cuda_emulated.so";
  return {};
}

}  // namespace

std::vector<std::string> cuda_module_candidates(const std::string& cuda_module) {
  const std::string file = module_file(cuda_module);
  if (file.empty()) return {cuda_module};  // a path
  std::vector<std::string> out;
  if (const auto dir = executable_dir(); !dir.empty()) {
    out.push_back((dir / file).string());
    out.push_back((dir / ".." / "lib" / "tessera" / file).lexically_normal().string());
  }
  out.push_back((std::filesystem::path(TESSERA_MODULE_BUILD_DIR) / file).string());
  out.push_back((std::filesystem::path(TESSERA_MODULE_INSTALL_DIR) / file).string());
  return out;
}

std::unique_ptr<Device> open_device(const DeviceSpec& spec) {
  if (spec.type == "cpu") return std::make_unique<CpuDevice>();
  if (spec.type != "cuda")
    throw std::runtime_error(
        fmt::format("executor.device = \"{}\": expected \"cpu\" or \"cuda\"", spec.type));
  const std::vector<std::string> candidates = cuda_module_candidates(spec.cuda_module);
  std::string path;
  for (const std::string& c : candidates) {
    if (std::filesystem::exists(c)) {
      path = c;
      break;
    }
  }
  if (path.empty())
    throw std::runtime_error(
        fmt::format("device cuda:{}: the CUDA device module \"{}\" is not "
                    "installed; looked for {}",
                    spec.ordinal, spec.cuda_module, fmt::join(candidates, ", ")));
  const cuda::DeviceModule module = cuda::DeviceModule::load(path);  // throws with dlerror()
  // Plugins with device code of their own load the same kind (ts_host_api.cuda_build): the
  // emulator's module is "emulated" or a file named *_emulated.so.
  const bool emulated = spec.cuda_module == "emulated" ||
                        std::filesystem::path(path).filename().string().ends_with("_emulated.so");
  set_process_cuda_build(emulated ? TS_CUDA_BUILD_EMULATED : TS_CUDA_BUILD_NATIVE);
  return std::make_unique<CudaDevice>(module.api(), spec.ordinal, path);
}

}  // namespace tessera::device
