#include "device/host_staging.hpp"

#include <algorithm>
#include <cstring>

namespace tessera::device {
namespace {

constexpr size_t kAlign = 256;  // each array starts where a DMA engine likes it

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

HostStaging::HostStaging(Device& device, size_t initial_bytes) : device_(device) {
  const size_t bytes = aligned(std::max<size_t>(initial_bytes, kAlign));
  blocks_.push_back({device_.allocate_host(bytes), bytes});
}

void* HostStaging::reserve(size_t bytes) {
  const size_t need = aligned(bytes);
  if (used_ + need > blocks_.back().bytes) {  // a new block, at least twice the last
    const size_t grown = std::max(need, 2 * blocks_.back().bytes);
    blocks_.push_back({device_.allocate_host(grown), grown});
    used_ = 0;
  }
  std::byte* at = blocks_.back().memory.get() + used_;
  used_ += need;
  return at;
}

void HostStaging::upload_bytes(void* dst, const void* src, size_t bytes, const Stream& stream) {
  void* staged = reserve(bytes);
  std::memcpy(staged, src, bytes);
  device_.copy(dst, staged, bytes, CopyKind::kHostToDevice, stream);
}

void HostStaging::reset() {
  if (blocks_.size() > 1) {  // one block that holds what the step needed
    const size_t total = capacity();
    blocks_.clear();
    blocks_.push_back({device_.allocate_host(total), total});
  }
  used_ = 0;
}

size_t HostStaging::capacity() const {
  size_t total = 0;
  for (const Block& b : blocks_) total += b.bytes;
  return total;
}

}  // namespace tessera::device
