// NCCL communicators for tensor-parallel ranks on GPUs of their own (docs/engine.md "Tensor
// parallelism"): one NcclStreamCommunicator (core/cuda/nccl_communicator.hpp) per device, rank r
// on devices[r]. ncclCommInitRank blocks until every rank has joined, so the ranks join on
// threads of their own, concurrently; the first failure is rethrown naming its rank.
//
// The devices must be CUDA devices of the GPU's module (NCCL has no emulated build: ranks on
// emulated devices use the host-memory collectives), on distinct ordinals.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "device/device.hpp"
#include "device/device_communicator.hpp"

namespace tessera::device {

std::vector<std::unique_ptr<DeviceCommunicator>> join_nccl_group(std::span<Device* const> devices);

}  // namespace tessera::device
