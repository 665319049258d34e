// A fixed pool of equally sized cache pages with a free list. Page i starts at data() + i *
// page_bytes; slot s of the pool is entry s % entries_per_page of page s / entries_per_page.
// Not thread-safe: owned by the engine loop (docs/engine.md).
#pragma once

#include <cstdint>
#include <vector>

namespace tessera {

class PagePool {
 public:
  PagePool(uint64_t page_bytes, int32_t entries_per_page, int64_t n_pages);

  // Returns a free page index, or -1 when the pool is exhausted.
  [[nodiscard]] int32_t allocate();
  void release(int32_t page);

  uint8_t* data() { return bytes_.data(); }
  const uint8_t* data() const { return bytes_.data(); }
  int64_t total_pages() const { return n_pages_; }
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()); }
  int32_t entries_per_page() const { return entries_per_page_; }
  uint64_t page_bytes() const { return page_bytes_; }

 private:
  uint64_t page_bytes_;
  int32_t entries_per_page_;
  int64_t n_pages_;
  std::vector<uint8_t> bytes_;
  std::vector<int32_t> free_;    // stack of free pages
  std::vector<uint8_t> in_use_;  // double-free / foreign-page guard
};

}  // namespace tessera
