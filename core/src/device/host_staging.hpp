// The host side of a step's uploads (token ids, positions, the compressors' plans): a bump arena
// in a device's host memory (Device::allocate_host: page-locked on a GPU), so that the copies run
// without the runtime staging them, may be enqueued while earlier work runs, and can be captured
// in a CUDA graph. A copy reads its source as the stream runs, so nothing put here is rewritten
// until the stream has passed it: reset() only after the step's synchronisation. A step that
// needs more than the arena holds takes another block; the next step starts with one block that
// holds them all.
//
// Ownership and threads: one rank's thread, like its stream. `device` outlives the arena.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "device/device.hpp"

namespace tessera::device {

class HostStaging {
 public:
  explicit HostStaging(Device& device, size_t initial_bytes = size_t{1} << 16);
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // Copies `values` into the arena and enqueues their copy to `dst` (device memory) on `stream`.
  template <class T>
  void upload(T* dst, std::span<const T> values, const Stream& stream) {
    if (values.empty()) {
      return;
    }
    upload_bytes(dst, values.data(), values.size_bytes(), stream);
  }
  void upload_bytes(void* dst, const void* src, size_t bytes, const Stream& stream);
  // `bytes` of the arena, unwritten, 256-byte aligned: for a plugin to fill and copy from itself
  // (ts_attention_inputs.host_workspace).
  [[nodiscard]] void* reserve(size_t bytes);

  // Whether anything was put since the last reset (the stream may still read it).
  [[nodiscard]] bool in_use() const { return used_ > 0 || blocks_.size() > 1; }
  // After the stream has passed every copy from the arena: starts the next step at its front.
  void reset();

  [[nodiscard]] size_t capacity() const;  // bytes of all blocks now held

 private:
  struct Block {
    HostBuffer memory;
    size_t bytes = 0;
  };

  Device& device_;
  std::vector<Block> blocks_;  // the last one is being filled
  size_t used_ = 0;            // bytes used of the last block
};

}  // namespace tessera::device
