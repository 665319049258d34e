// A device::DeviceCommunicator for ranks whose device memory the host addresses (the cpu
// backend, the SIMT emulator: device/device_communicator.hpp): each collective waits for the
// rank's stream, then runs the group's HostCommunicator (executor/host_communicator.hpp) on the
// device pointers, so later work on the stream sees the result. On a GPU use NCCL instead.
#pragma once

#include <memory>

#include "device/device.hpp"
#include "device/device_communicator.hpp"
#include "executor/host_communicator.hpp"

namespace tessera {

// Rank `rank` of `group` on `device`; throws tessera::Error for a device whose memory the host
// cannot address (a native CUDA device). The group and the device must outlive it.
[[nodiscard]] std::unique_ptr<device::DeviceCommunicator> make_host_memory_communicator(
    HostCommGroup& group, int rank, device::Device& device);

}  // namespace tessera
