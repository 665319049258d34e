// A contiguous array of trivially copyable T in host memory that either owns a heap allocation or
// shares a block someone else owns (a device's page-locked block: dsv4::Logits of a device
// forward). Copies are deep, into the heap; moves hand the memory over. Elements a resize adds
// are left unwritten (for buffers a kernel overwrites at once, like a step's logits).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace tessera {

template <class T>
class HostArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  HostArray() = default;
  explicit HostArray(size_t n) { resize(n); }
  // `n` elements at `data`, kept alive by `owner` (which frees or recycles them when it goes).
  HostArray(T* data, size_t n, std::shared_ptr<const void> owner)
      : data_(data), size_(n), owner_(std::move(owner)) {}
  HostArray(const HostArray& o) : HostArray(o.size_) { std::copy_n(o.data_, size_, data_); }
  HostArray& operator=(const HostArray& o) {
    if (this != &o) {
      HostArray(o).swap(*this);
    }
    return *this;
  }
  HostArray(HostArray&& o) noexcept { swap(o); }
  HostArray& operator=(HostArray&& o) noexcept {
    HostArray(std::move(o)).swap(*this);
    return *this;
  }
  ~HostArray() = default;

  // Keeps the first min(size, n) elements; moves to the heap unless n is the current size.
  void resize(size_t n) {
    if (n == size_) {
      return;
    }
    std::shared_ptr<T[]> heap = std::make_shared_for_overwrite<T[]>(n);
    std::copy_n(data_, std::min(size_, n), heap.get());
    data_ = heap.get();
    size_ = n;
    owner_ = std::move(heap);
  }

  [[nodiscard]] T* data() { return data_; }
  [[nodiscard]] const T* data() const { return data_; }
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

  friend bool operator==(const HostArray& a, const HostArray& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  void swap(HostArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(owner_, o.owner_);
  }
  T* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<const void> owner_;
};

}  // namespace tessera
