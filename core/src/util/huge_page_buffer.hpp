// A zero-filled byte buffer of anonymous memory that asks, before anything touches it, to be
// backed by 2 MiB pages (transparent huge pages). For large, long-lived memory read all over each
// step, like the kv cache's page pools: on 4 KiB pages a 64-sequence decode step of 50m misses
// the TLB on nearly every page it reads (each sequence's pages lie anywhere in the pool), and
// each miss is a page walk the prefetchers cannot hide. Linux gives anonymous memory huge pages
// only where asked (the usual `transparent_hugepage/enabled = madvise`), and asking before the
// first write costs nothing (MADV_COLLAPSE afterwards copies, ~2 ms per MiB on the development
// VM). The memory is the kernel's zero pages until written, so an unused pool costs no RAM; a
// kernel that ignores the advice leaves ordinary pages. Move-only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  explicit HugePageBuffer(size_t bytes);  // throws std::bad_alloc when the mapping fails
  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return bytes_; }
  // Bytes given MADV_HUGEPAGE: the whole 2 MiB pages from data() (the tail keeps 4 KiB pages, so
  // a buffer never holds more than its size of RAM); 0 when the kernel refused the advice.
  size_t advised_bytes() const { return advised_; }

 private:
  void swap(HugePageBuffer& other) noexcept;

  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
  size_t advised_ = 0;
};

}  // namespace tessera
