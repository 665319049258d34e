// What a tensor-parallel rank other than 0 owns when the model runs on a device (rank 0's are
// the Runtime's): its stream, its share of the weights placed on the device
// (model/device_shard.hpp), their view, its kv format, attention plugin and page pools in the
// device's memory, its device collectives and its DeviceModel. A rank computes on a device of its
// own (ordinal = rank 0's + rank: a GPU each, or an emulated device each) or, where the module has
// fewer devices than ranks and they are emulated, on the runtime's device beside the others, each
// on its own stream. Its collectives are NCCL on GPUs and the executor's host group on emulated
// devices (executor/host_memory_communicator.hpp). Members are destroyed model first, the
// device last.
#pragma once

#include <memory>

#include "device/device_communicator.hpp"
#include "model/device_model.hpp"
#include "model/device_weight_views.hpp"
#include "model/device_weights.hpp"
#include "runtime/rank_kv.hpp"
#include "runtime/runtime.hpp"

namespace tessera {

class DeviceRank {
 public:
  // Places rank `rank` of `ranks`'s share of runtime's checkpoint on `own_device`, or on the
  // runtime's device when it is null; `comm` joins it to the other ranks.
  DeviceRank(Runtime& runtime, std::unique_ptr<device::Device> own_device,
             std::unique_ptr<device::DeviceCommunicator> comm, int rank, int ranks);
  DeviceRank(const DeviceRank&) = delete;
  DeviceRank& operator=(const DeviceRank&) = delete;

  dsv4::ForwardModel& model() { return *model_; }
  KvPools& pools() { return *kv_.pools; }
  device::Device& device() const { return device_; }
  device::DeviceCommunicator& communicator() const { return *comm_; }

 private:
  std::unique_ptr<device::Device> own_device_;  // null: the runtime's
  device::Device& device_;
  device::Stream stream_;
  dsv4::DeviceModelWeights weights_;
  dsv4::DeviceModelView view_;
  RankKv kv_;
  std::unique_ptr<device::DeviceCommunicator> comm_;
  std::unique_ptr<dsv4::DeviceModel> model_;
};

}  // namespace tessera
