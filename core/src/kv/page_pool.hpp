// A fixed pool of equally sized cache pages with a free list. Page i starts at data() + i *
// page_bytes; slot s of the pool is entry s % entries_per_page of page s / entries_per_page.
//
// Pages are reference counted so that prefix-cache snapshots and the sequences restored from them
// can share pages (docs/engine.md "Prefix cache"). Each page also remembers its write frontier:
// one past the highest entry any holder has written. Entries are only ever appended, so a holder
// may write entry e of a shared page without copying only when e is the frontier (nobody else has
// written there); otherwise it must clone the page first (copy-on-write).
// Not thread-safe: owned by one rank's thread (docs/engine.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "util/huge_page_buffer.hpp"

namespace tessera {

// Page bytes held elsewhere (a device's memory): `data` has page_bytes * n_pages bytes and
// outlives the pool; `copy` copies one page's bytes within it (a clone), ordered before any later
// use of the destination (the rank's stream).
struct PageStorage {
  uint8_t* data = nullptr;
  std::function<void(uint8_t* dst, const uint8_t* src, uint64_t bytes)> copy;
};

class PagePool {
 public:
  // Page bytes in host memory owned by the pool.
  PagePool(uint64_t page_bytes, int32_t entries_per_page, int64_t n_pages);
  PagePool(uint64_t page_bytes, int32_t entries_per_page, int64_t n_pages, PageStorage storage);

  // Returns a free page index (reference count 1, frontier 0), or -1 when the pool is exhausted.
  [[nodiscard]] int32_t allocate();
  // One more holder of an allocated page.
  void retain(int32_t page);
  // One holder fewer; the page is free again when none is left.
  void release(int32_t page);
  // A new page with the same bytes and frontier as `page` (copy-on-write), or -1 when exhausted.
  [[nodiscard]] int32_t clone(int32_t page);

  int32_t refcount(int32_t page) const { return refcount_[static_cast<std::size_t>(page)]; }
  int32_t frontier(int32_t page) const { return frontier_[static_cast<std::size_t>(page)]; }
  // Entry `entry` of `page` is being written: advances the frontier.
  void note_write(int32_t page, int32_t entry);
  // True when writing entry `entry` of `page` could overwrite what another holder reads.
  bool write_needs_copy(int32_t page, int32_t entry) const {
    return refcount(page) > 1 && frontier(page) > entry;
  }

  uint8_t* data() { return storage_.data != nullptr ? storage_.data : bytes_.data(); }
  const uint8_t* data() const { return storage_.data != nullptr ? storage_.data : bytes_.data(); }
  int64_t total_pages() const { return n_pages_; }
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()); }
  int32_t entries_per_page() const { return entries_per_page_; }
  uint64_t page_bytes() const { return page_bytes_; }

 private:
  void check_in_use(int32_t page, const char* what) const;

  uint64_t page_bytes_;
  int32_t entries_per_page_;
  int64_t n_pages_;
  HugePageBuffer bytes_;  // zero until written; 2 MiB pages where the kernel grants them (host)
  PageStorage storage_;   // or the bytes held elsewhere
  std::vector<int32_t> free_;      // stack of free pages
  std::vector<int32_t> refcount_;  // 0: free (double-free / foreign-page guard)
  std::vector<int32_t> frontier_;
};

}  // namespace tessera
