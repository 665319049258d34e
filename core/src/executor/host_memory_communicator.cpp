#include "executor/host_memory_communicator.hpp"

#include <vector>

#include "util/check.hpp"
#include "weights/numeric_encoding.hpp"
#include "weights/numeric_formats.hpp"

namespace tessera {
namespace {

class HostMemoryCommunicator final : public device::DeviceCommunicator {
 public:
  HostMemoryCommunicator(Communicator& host, device::Device& device)
      : host_(host), device_(device) {}

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  bool enqueued() const override { return false; }

  void all_reduce_sum(float* data, size_t count, const device::Stream& stream) override {
    device_.synchronize(stream);
    host_.all_reduce_sum(data, count);
  }
  void all_reduce_sum_bf16(uint16_t* data, size_t count, const device::Stream& stream) override {
    device_.synchronize(stream);
    wide_.resize(count);
    for (size_t i = 0; i < count; ++i) wide_[i] = weights::bf16_to_f32(data[i]);
    host_.all_reduce_sum(wide_.data(), count);
    for (size_t i = 0; i < count; ++i) data[i] = weights::f32_to_bf16(wide_[i]);
  }
  void all_gather(const float* send, size_t count, float* recv,
                  const device::Stream& stream) override {
    device_.synchronize(stream);
    host_.all_gather(send, count, recv);
  }
  void abort_group(const char* reason) override { host_.abort_group(reason); }

 private:
  Communicator& host_;
  device::Device& device_;
  std::vector<float> wide_;  // all_reduce_sum_bf16's fp32 copy, reused across calls
};

}  // namespace

std::unique_ptr<device::DeviceCommunicator> make_host_memory_communicator(HostCommGroup& group,
                                                                          int rank,
                                                                          device::Device& device) {
  TS_CHECK(device.kind() == device::DeviceKind::kCpu || device.emulated(),
           "rank {}: {} keeps its memory out of the host's reach: its collectives need NCCL", rank,
           device.describe());
  return std::make_unique<HostMemoryCommunicator>(group.communicator(rank), device);
}

}  // namespace tessera
