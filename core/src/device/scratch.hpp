// Named device buffers a forward reuses from step to step (activations, workspaces), each grown
// when a step needs more and otherwise kept at its address. Growing waits for the stream first:
// work already enqueued may still read the old buffer; it also counts a new generation, so that
// graphs captured with the old addresses are known to be stale (model/piecewise_graphs.hpp).
// One rank's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "device/device.hpp"

namespace tessera::device {

class Scratch {
 public:
  Scratch(Device& device, const Stream& stream) : device_(device), stream_(stream) {}

  // At least count values of T under `name`; the previous contents are kept unless it grew.
  template <class T>
  [[nodiscard]] T* get(const std::string& name, int64_t count) {
    return static_cast<T*>(bytes(name, static_cast<size_t>(count) * sizeof(T)));
  }
  [[nodiscard]] void* bytes(const std::string& name, size_t bytes) {
    DeviceBuffer& b = buffers_[name];
    if (b.bytes() < bytes || b.data() == nullptr) {
      if (b.data() != nullptr) {
        device_.synchronize(stream_);
        ++generation_;
      }
      b = DeviceBuffer();
      b = device_.allocate(bytes == 0 ? 1 : bytes);
    }
    return b.data();
  }
  // How many times a buffer has moved (grown) so far.
  [[nodiscard]] uint64_t generation() const { return generation_; }
  [[nodiscard]] size_t total_bytes() const {
    size_t n = 0;
    for (const auto& [name, b] : buffers_) {
      n += b.bytes();
    }
    return n;
  }

 private:
  Device& device_;
  const Stream& stream_;
  std::map<std::string, DeviceBuffer> buffers_;
  uint64_t generation_ = 0;
};

}  // namespace tessera::device
