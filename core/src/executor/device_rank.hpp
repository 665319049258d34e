// What a tensor-parallel rank other than 0 owns when the model runs on a device (rank 0's are
// the Runtime's): its stream, its share of the weights placed on the device
// (model/device_shard.hpp), their view, its kv format, attention plugin and page pools in the
// device's memory, its device collectives and its DeviceModel. Ranks share the runtime's device
// (the SIMT emulator's one device, each rank its own stream); their collectives run through the
// executor's host group (executor/host_memory_communicator.hpp). Members are destroyed model first,
// stream last.
#pragma once

#include <memory>

#include "device/device_communicator.hpp"
#include "executor/host_communicator.hpp"
#include "model/device_model.hpp"
#include "model/device_weight_views.hpp"
#include "model/device_weights.hpp"
#include "runtime/rank_kv.hpp"
#include "runtime/runtime.hpp"

namespace tessera {

class DeviceRank {
 public:
  // Places rank `rank` of `ranks`'s share of runtime's checkpoint on runtime's device.
  DeviceRank(Runtime& runtime, HostCommGroup& group, int rank, int ranks);
  DeviceRank(const DeviceRank&) = delete;
  DeviceRank& operator=(const DeviceRank&) = delete;

  dsv4::ForwardModel& model() { return *model_; }
  KvPools& pools() { return *kv_.pools; }

 private:
  device::Stream stream_;
  dsv4::DeviceModelWeights weights_;
  dsv4::DeviceModelView view_;
  RankKv kv_;
  std::unique_ptr<device::DeviceCommunicator> comm_;
  std::unique_ptr<dsv4::DeviceModel> model_;
};

}  // namespace tessera
