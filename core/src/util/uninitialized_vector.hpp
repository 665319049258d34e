// A std::vector whose resize() leaves new elements default-initialised (for float: unwritten)
// instead of zeroing them: for buffers a kernel overwrites at once, like a step's logits (64 x
// 16384 floats = 4 MiB: zeroing them on the loop thread before the vocabulary head writes every
// one costs ~1% of a 50m 64-sequence step).
#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace tessera {

template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>& /*other*/) noexcept {}
  // value-initialisation (resize(n), vector(n)) becomes default-initialisation
  template <typename U>
  void construct(U* p) noexcept(noexcept(::new (static_cast<void*>(p)) U)) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    std::allocator_traits<std::allocator<T>>::construct(static_cast<std::allocator<T>&>(*this), p,
                                                        std::forward<Args>(args)...);
  }
};

template <typename T>
using UninitializedVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace tessera
