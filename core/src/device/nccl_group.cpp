#include "device/nccl_group.hpp"

#include <exception>
#include <set>
#include <string>
#include <thread>

#include "device/cuda_device.hpp"
#include "nccl_communicator.hpp"
#include "util/check.hpp"

namespace tessera::device {

std::vector<std::unique_ptr<DeviceCommunicator>> join_nccl_group(std::span<Device* const> devices) {
  TS_CHECK(!devices.empty(), "an NCCL group needs at least one rank");
  std::set<int32_t> ordinals;
  for (size_t r = 0; r < devices.size(); ++r) {
    const auto* gpu = dynamic_cast<const CudaDevice*>(devices[r]);
    TS_CHECK(gpu != nullptr && !gpu->emulated(),
             "NCCL rank {}: {} is not a GPU of the native CUDA module (emulated and cpu ranks use "
             "the host-memory collectives)",
             r, devices[r]->describe());
    TS_CHECK(ordinals.insert(gpu->ordinal()).second,
             "NCCL rank {}: cuda:{} already holds another rank (NCCL takes one rank per GPU)", r,
             gpu->ordinal());
  }
  const auto& first = dynamic_cast<const CudaDevice&>(*devices[0]);
  const ts_cuda_nccl_api& api = cuda::NcclCommunicator::load_api(first.module_path());
  const cuda::NcclCommunicator::UniqueId id = cuda::NcclCommunicator::unique_id(api);
  const int ranks = static_cast<int>(devices.size());
  std::vector<std::unique_ptr<DeviceCommunicator>> comms(devices.size());
  std::vector<std::string> errors(devices.size());
  std::vector<std::thread> joining;
  for (int r = 0; r < ranks; ++r) {
    joining.emplace_back([&, r] {
      try {
        comms[static_cast<size_t>(r)] = std::make_unique<cuda::NcclStreamCommunicator>(
            api, devices[static_cast<size_t>(r)]->ordinal(), ranks, r, id);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& t : joining) t.join();
  for (int r = 0; r < ranks; ++r) {
    TS_CHECK(errors[static_cast<size_t>(r)].empty(), "NCCL rank {} on {}: {}", r,
             devices[static_cast<size_t>(r)]->describe(), errors[static_cast<size_t>(r)]);
  }
  return comms;
}

}  // namespace tessera::device
