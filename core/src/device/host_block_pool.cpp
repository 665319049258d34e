#include "device/host_block_pool.hpp"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

namespace tessera::device {

struct HostBlockPool::Shelf {
  struct Block {
    HostBuffer memory;
    size_t bytes = 0;
  };
  std::mutex mutex;
  std::vector<Block> free;  // guarded by mutex
  size_t kept = 0;
  size_t allocations = 0;  // guarded by mutex

  void give_back(Block block) {
    std::lock_guard lock(mutex);
    if (free.size() < kept) free.push_back(std::move(block));
  }  // else the block is freed here, after the lock
};

HostBlockPool::HostBlockPool(Device& device, size_t kept)
    : device_(device), shelf_(std::make_shared<Shelf>()) {
  shelf_->kept = kept;
}

std::shared_ptr<std::byte> HostBlockPool::take(size_t bytes) {
  Shelf::Block block;
  {
    std::lock_guard lock(shelf_->mutex);
    auto& free = shelf_->free;
    auto best = free.end();
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->bytes >= bytes && (best == free.end() || it->bytes < best->bytes)) best = it;
    }
    if (best != free.end()) {
      block = std::move(*best);
      free.erase(best);
    }
  }
  if (block.memory == nullptr) {
    // Rounded up to 1 MiB so that a step a few rows larger reuses the block.
    constexpr size_t kGrain = size_t{1} << 20;
    block.bytes = (std::max<size_t>(bytes, 1) + kGrain - 1) / kGrain * kGrain;
    block.memory = device_.allocate_host(block.bytes);
    std::lock_guard lock(shelf_->mutex);
    ++shelf_->allocations;
  }
  std::byte* data = block.memory.get();
  // The block travels in the deleter: returned to the shelf if the pool still has one.
  struct Return {
    std::weak_ptr<Shelf> shelf;
    std::shared_ptr<Shelf::Block> block;
    void operator()(std::byte*) const {
      if (auto s = shelf.lock()) s->give_back(std::move(*block));
    }
  };
  return {data, Return{shelf_, std::make_shared<Shelf::Block>(std::move(block))}};
}

size_t HostBlockPool::allocations() const {
  std::lock_guard lock(shelf_->mutex);
  return shelf_->allocations;
}

size_t HostBlockPool::free_blocks() const {
  std::lock_guard lock(shelf_->mutex);
  return shelf_->free.size();
}

}  // namespace tessera::device
