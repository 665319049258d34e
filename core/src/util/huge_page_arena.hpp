// Memory placed once and released all together, on 2 MiB pages: a bump arena of HugePageBuffers
// and a std::allocator-compatible handle to it. A model's linear weights are copied into one
// (model/weight_placement.hpp): every batched decode step streams them from memory, and on 4 KiB
// pages each new page of a weight costs a TLB miss and a page walk (50m, interleaved runs of
// `tessera bench engine` with the heap on huge pages: the 64-sequence step and batch 1 both ~3-4%
// faster). Not thread-safe: fill an arena from one thread, then only read what it holds.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

#include "util/huge_page_buffer.hpp"

namespace tessera {

class HugePageArena {
 public:
  // Blocks are at least block_bytes; a larger request gets a block of its own size.
  explicit HugePageArena(size_t block_bytes = size_t{64} << 20) : block_bytes_(block_bytes) {}
  // 64-byte aligned (a cache line), zero-filled; lives as long as the arena.
  void* allocate(size_t bytes);
  // What allocate(bytes) takes from a block: bytes rounded up to whole 64-byte granules.
  static size_t footprint(size_t bytes) { return std::max<size_t>((bytes + 63) / 64 * 64, 64); }
  size_t reserved_bytes() const;  // the blocks' sizes
  size_t advised_bytes() const;   // of those, advised MADV_HUGEPAGE (HugePageBuffer)

 private:
  size_t block_bytes_;
  std::vector<HugePageBuffer> blocks_;
  size_t used_ = 0;  // bytes taken from the last block
};

// std::allocator when default-constructed; with an arena, allocates from it and never frees (the
// arena goes when the last allocator holding it does). A container copied from one that uses an
// arena gets the default (copies never grow the arena); moves and swaps carry the arena along.
template <typename T>
class ArenaAllocator {
 public:
  using value_type = T;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using propagate_on_container_copy_assignment = std::false_type;

  ArenaAllocator() noexcept = default;
  explicit ArenaAllocator(std::shared_ptr<HugePageArena> arena) noexcept
      : arena_(std::move(arena)) {}
  template <typename U>
  ArenaAllocator(const ArenaAllocator<U>& other) noexcept : arena_(other.arena()) {}  // NOLINT

  T* allocate(size_t n) {
    if (!arena_) {
      return std::allocator<T>().allocate(n);
    }
    static_assert(alignof(T) <= 64);
    return static_cast<T*>(arena_->allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (!arena_) {
      std::allocator<T>().deallocate(p, n);
    }
  }
  ArenaAllocator select_on_container_copy_construction() const { return ArenaAllocator(); }

  const std::shared_ptr<HugePageArena>& arena() const { return arena_; }
  template <typename U>
  bool operator==(const ArenaAllocator<U>& other) const noexcept {
    return arena_ == other.arena();
  }

 private:
  std::shared_ptr<HugePageArena> arena_;
};

}  // namespace tessera
