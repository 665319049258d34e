#include "util/huge_page_arena.hpp"

#include <algorithm>

namespace tessera {

void* HugePageArena::allocate(size_t bytes) {
  bytes = footprint(bytes);
  if (blocks_.empty() || used_ + bytes > blocks_.back().size()) {
    blocks_.emplace_back(std::max(bytes, block_bytes_));
    used_ = 0;
  }
  void* p = blocks_.back().data() + used_;
  used_ += bytes;
  return p;
}

size_t HugePageArena::reserved_bytes() const {
  size_t n = 0;
  for (const HugePageBuffer& b : blocks_) {
    n += b.size();
  }
  return n;
}

size_t HugePageArena::advised_bytes() const {
  size_t n = 0;
  for (const HugePageBuffer& b : blocks_) {
    n += b.advised_bytes();
  }
  return n;
}

}  // namespace tessera
