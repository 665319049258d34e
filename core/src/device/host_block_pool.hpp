// Blocks of a device's host memory (Device::allocate_host: page-locked on a GPU), reused from
// step to step: page-locking memory costs far more than a step's copy, so a model keeps the few
// blocks its steps need. A block is handed out with shared ownership; when its last owner lets go
// it returns to the pool, or is freed when the pool is gone or already keeps enough blocks. A
// block needs neither the pool nor the device to stay alive (HostBuffer).
//
// Threads: take() and the blocks' return may run on any threads.
#pragma once

#include <cstddef>
#include <memory>

#include "device/device.hpp"

namespace tessera::device {

class HostBlockPool {
 public:
  // `device` outlives the pool; at most `kept` free blocks stay allocated.
  explicit HostBlockPool(Device& device, size_t kept = 4);
  HostBlockPool(const HostBlockPool&) = delete;
  HostBlockPool& operator=(const HostBlockPool&) = delete;

  // A block of at least `bytes`: the smallest free one that is big enough, else a new one.
  std::shared_ptr<std::byte> take(size_t bytes);

  // Blocks allocated so far and blocks now free in the pool (tests, logs).
  [[nodiscard]] size_t allocations() const;
  [[nodiscard]] size_t free_blocks() const;

 private:
  struct Shelf;
  Device& device_;
  std::shared_ptr<Shelf> shelf_;
};

}  // namespace tessera::device
