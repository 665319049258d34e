#include "kv/window_buffer.hpp"

#include <mutex>
#include <unordered_map>

namespace tessera::dsv4 {
namespace {

struct WindowCache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_by_size;
  size_t bytes = 0;
};

// Never destroyed: a sequence owned by a static (a test's runtime) may free its windows during
// static destruction, after a destroyed cache would be gone. What it holds stays reachable.
WindowCache& cache() {
  static auto* instance = new WindowCache;
  return *instance;
}

}  // namespace

void* take_window_block(size_t bytes) {
  if (bytes == 0) return nullptr;
  {
    WindowCache& c = cache();
    std::lock_guard lock(c.mutex);
    const auto it = c.free_by_size.find(bytes);
    if (it != c.free_by_size.end() && !it->second.empty()) {
      void* block = it->second.back();
      it->second.pop_back();
      c.bytes -= bytes;
      return block;
    }
  }
  return ::operator new(bytes);
}

void give_window_block(void* block, size_t bytes) noexcept {
  if (block == nullptr) return;
  WindowCache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    if (c.bytes + bytes <= kWindowCacheBytes) {
      try {
        c.free_by_size[bytes].push_back(block);
        c.bytes += bytes;
        return;
      } catch (...) {  // no memory for the bookkeeping: free the block instead
      }
    }
  }
  ::operator delete(block, bytes);
}

size_t cached_window_bytes() {
  WindowCache& c = cache();
  std::lock_guard lock(c.mutex);
  return c.bytes;
}

}  // namespace tessera::dsv4
