// Storage for the compressors' per-sequence window buffers (kv/compressor_state.hpp): ~0.5 MB per
// sequence on the 50m preset, ~12 MB on DeepSeek-V4-Flash, allocated at every admission and freed
// at every finish. Two things make that cheap:
// - WindowAllocator default-initialises: a window is written slot by slot before a closing token
//   reads it (CompressorState::push), so zero-filling it is wasted work.
// - Freed blocks go to a small process-wide cache by size and the next admission takes them back,
//   instead of asking malloc for fresh memory that it may have handed back to the kernel (a page
//   fault per 4 KiB on first write) or must grow its heap for (an mprotect per block in a
//   thread's arena). The cache holds at most kWindowCacheBytes; beyond that blocks are freed.
// Thread-safety: any thread (each tensor-parallel rank creates its own sequences); one mutex.
#pragma once

#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace tessera::dsv4 {

inline constexpr size_t kWindowCacheBytes = size_t{256} << 20;

// A block of `bytes` from the cache when one of that size is there, else from operator new.
void* take_window_block(size_t bytes);
// Back to the cache (or operator delete when the cache is full).
void give_window_block(void* block, size_t bytes) noexcept;
// Bytes the cache holds now (for tests).
size_t cached_window_bytes();

template <class T>
struct WindowAllocator {
  using value_type = T;
  WindowAllocator() = default;
  template <class U>
  explicit WindowAllocator(const WindowAllocator<U>& /*other*/) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(take_window_block(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { give_window_block(p, n * sizeof(T)); }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0) {
      ::new (static_cast<void*>(p)) U;  // default-initialised: no zero fill
    } else {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  }
  template <class U>
  bool operator==(const WindowAllocator<U>& /*other*/) const noexcept {
    return true;
  }
};

using WindowBuffer = std::vector<float, WindowAllocator<float>>;

}  // namespace tessera::dsv4
