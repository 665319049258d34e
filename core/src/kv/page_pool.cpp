#include "kv/page_pool.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "util/check.hpp"

namespace tessera {

PagePool::PagePool(uint64_t page_bytes, int32_t entries_per_page, int64_t n_pages)
    : page_bytes_(page_bytes),
      entries_per_page_(entries_per_page),
      n_pages_(n_pages),
      bytes_(static_cast<size_t>(page_bytes * static_cast<uint64_t>(n_pages))),
      refcount_(static_cast<size_t>(n_pages), 0),
      frontier_(static_cast<size_t>(n_pages), 0) {
  TS_CHECK(page_bytes > 0 && entries_per_page > 0 && n_pages > 0,
           "page pool needs positive sizes (page_bytes {}, entries {}, pages {})", page_bytes,
           entries_per_page, n_pages);
  free_.reserve(static_cast<size_t>(n_pages));
  for (int64_t p = n_pages - 1; p >= 0; --p) free_.push_back(static_cast<int32_t>(p));
}

PagePool::PagePool(uint64_t page_bytes, int32_t entries_per_page, int64_t n_pages,
                   PageStorage storage)
    : page_bytes_(page_bytes),
      entries_per_page_(entries_per_page),
      n_pages_(n_pages),
      storage_(std::move(storage)),
      refcount_(static_cast<size_t>(n_pages), 0),
      frontier_(static_cast<size_t>(n_pages), 0) {
  TS_CHECK(page_bytes > 0 && entries_per_page > 0 && n_pages > 0,
           "page pool needs positive sizes (page_bytes {}, entries {}, pages {})", page_bytes,
           entries_per_page, n_pages);
  TS_CHECK(storage_.data != nullptr && storage_.copy, "page pool: external storage without {}",
           storage_.data == nullptr ? "bytes" : "a copy function");
  free_.reserve(static_cast<size_t>(n_pages));
  for (int64_t p = n_pages - 1; p >= 0; --p) free_.push_back(static_cast<int32_t>(p));
}

void PagePool::check_in_use(int32_t page, const char* what) const {
  TS_CHECK(page >= 0 && page < n_pages_ && refcount_[static_cast<size_t>(page)] > 0,
           "{} of page {} that is not in use (pool of {})", what, page, n_pages_);
}

int32_t PagePool::allocate() {
  if (free_.empty()) return -1;
  const int32_t page = free_.back();
  free_.pop_back();
  refcount_[static_cast<size_t>(page)] = 1;
  frontier_[static_cast<size_t>(page)] = 0;
  return page;
}

void PagePool::retain(int32_t page) {
  check_in_use(page, "retain");
  ++refcount_[static_cast<size_t>(page)];
}

void PagePool::release(int32_t page) {
  check_in_use(page, "release");
  if (--refcount_[static_cast<size_t>(page)] == 0) free_.push_back(page);
}

int32_t PagePool::clone(int32_t page) {
  check_in_use(page, "clone");
  const int32_t copy = allocate();
  if (copy < 0) return -1;
  uint8_t* dst = data() + static_cast<uint64_t>(copy) * page_bytes_;
  const uint8_t* src = data() + static_cast<uint64_t>(page) * page_bytes_;
  if (storage_.copy) {
    storage_.copy(dst, src, page_bytes_);
  } else {
    std::memcpy(dst, src, page_bytes_);
  }
  frontier_[static_cast<size_t>(copy)] = frontier_[static_cast<size_t>(page)];
  return copy;
}

void PagePool::note_write(int32_t page, int32_t entry) {
  int32_t& f = frontier_[static_cast<size_t>(page)];
  f = std::max(f, entry + 1);
}

}  // namespace tessera
