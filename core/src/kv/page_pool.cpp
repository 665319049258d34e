#include "kv/page_pool.hpp"

#include "util/check.hpp"

namespace tessera {

PagePool::PagePool(uint64_t page_bytes, int32_t entries_per_page, int64_t n_pages)
    : page_bytes_(page_bytes),
      entries_per_page_(entries_per_page),
      n_pages_(n_pages),
      bytes_(static_cast<size_t>(page_bytes * static_cast<uint64_t>(n_pages))),
      in_use_(static_cast<size_t>(n_pages), 0) {
  TS_CHECK(page_bytes > 0 && entries_per_page > 0 && n_pages > 0,
           "page pool needs positive sizes (page_bytes {}, entries {}, pages {})", page_bytes,
           entries_per_page, n_pages);
  free_.reserve(static_cast<size_t>(n_pages));
  for (int64_t p = n_pages - 1; p >= 0; --p) free_.push_back(static_cast<int32_t>(p));
}

int32_t PagePool::allocate() {
  if (free_.empty()) return -1;
  const int32_t page = free_.back();
  free_.pop_back();
  in_use_[static_cast<size_t>(page)] = 1;
  return page;
}

void PagePool::release(int32_t page) {
  TS_CHECK(page >= 0 && page < n_pages_ && in_use_[static_cast<size_t>(page)] == 1,
           "release of page {} that is not in use (pool of {})", page, n_pages_);
  in_use_[static_cast<size_t>(page)] = 0;
  free_.push_back(page);
}

}  // namespace tessera
