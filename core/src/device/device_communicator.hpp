// Collectives between the tensor-parallel ranks of one model when each rank computes on a device
// (docs/engine.md "Tensor parallelism"): buffers are memory of the rank's device, and each
// collective is ordered on the rank's stream, after the work enqueued there before it and before
// the work enqueued after it. Every rank calls the same collectives in the same order.
//
// Implementations:
//   - NCCL (core/cuda/nccl_communicator.hpp, NcclStreamCommunicator): enqueued on the stream, no
//     host wait; the GPU path.
//   - host memory (executor/host_memory_communicator.hpp): for devices whose memory the host
//     addresses (the cpu backend, the SIMT emulator): waits for the rank's stream, then runs the
//     in-process HostCommunicator on the pointers.
// Determinism: sums in a fixed order for a fixed rank count, so every rank gets the same bits.
// A rank that fails calls abort_group(); the others' pending and later collectives then throw
// tessera::Error instead of waiting forever.
// Thread-safety: one object per rank, used by that rank's thread; abort_group from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/device.hpp"

namespace tessera::device {

class DeviceCommunicator {
 public:
  virtual ~DeviceCommunicator() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  // True when the collectives are enqueued without a host wait (NCCL).
  [[nodiscard]] virtual bool enqueued() const = 0;

  // data[i] = sum over ranks of data[i], in place, on every rank.
  virtual void all_reduce_sum(float* data, size_t count, const Stream& stream) = 0;
  // The same over bf16 values (half the bytes on the wire): the sum rounded to bf16. NCCL adds
  // in fp32 and rounds to bf16 after each step of its ring; the host-memory communicator widens
  // every rank's values, sums them in the fp32 order of all_reduce_sum and rounds once.
  virtual void all_reduce_sum_bf16(uint16_t* data, size_t count, const Stream& stream) = 0;
  // recv[r * count + i] = rank r's send[i]; recv holds size() * count floats.
  virtual void all_gather(const float* send, size_t count, float* recv, const Stream& stream) = 0;
  virtual void abort_group(const char* reason) = 0;
};

}  // namespace tessera::device
