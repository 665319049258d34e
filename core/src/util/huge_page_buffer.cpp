#include "util/huge_page_buffer.hpp"

#include <sys/mman.h>

#include <new>
#include <utility>

namespace tessera {

HugePageBuffer::HugePageBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) {
    return;
  }
  // One huge page more than asked, so that data() can start on a 2 MiB boundary.
  map_bytes_ = bytes + kHugePageBytes;
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw std::bad_alloc();
  }
  const auto start = reinterpret_cast<uintptr_t>(map_);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  data_ = static_cast<uint8_t*>(map_) + (aligned - start);  // within the mapping
  const size_t whole = bytes / kHugePageBytes * kHugePageBytes;
  if (whole > 0 && ::madvise(data_, whole, MADV_HUGEPAGE) == 0) {
    advised_ = whole;
  }
}

HugePageBuffer::~HugePageBuffer() {
  if (map_ != nullptr) {
    ::munmap(map_, map_bytes_);
  }
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept { swap(other); }

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  HugePageBuffer taken(std::move(other));  // our old mapping leaves with `taken`
  swap(taken);
  return *this;
}

void HugePageBuffer::swap(HugePageBuffer& other) noexcept {
  std::swap(map_, other.map_);
  std::swap(map_bytes_, other.map_bytes_);
  std::swap(data_, other.data_);
  std::swap(bytes_, other.bytes_);
  std::swap(advised_, other.advised_);
}

}  // namespace tessera
