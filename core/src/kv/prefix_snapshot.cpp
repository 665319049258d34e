#include "kv/prefix_snapshot.hpp"

#include <utility>

#include "kv/sequence_kv.hpp"

namespace tessera {

PrefixSnapshot::PrefixSnapshot(KvPools& pools, int64_t length, std::vector<Layer> layers)
    : pools_(&pools), length_(length), layers_(std::move(layers)) {}

PrefixSnapshot::~PrefixSnapshot() { release(); }

PrefixSnapshot::PrefixSnapshot(PrefixSnapshot&& other) noexcept
    : pools_(std::exchange(other.pools_, nullptr)),
      length_(other.length_),
      layers_(std::move(other.layers_)) {}

PrefixSnapshot& PrefixSnapshot::operator=(PrefixSnapshot&& other) noexcept {
  if (this != &other) {
    release();
    pools_ = std::exchange(other.pools_, nullptr);
    length_ = other.length_;
    layers_ = std::move(other.layers_);
  }
  return *this;
}

void PrefixSnapshot::release() noexcept {
  if (pools_ == nullptr) return;
  for (const Layer& l : layers_) {
    for (int32_t p : l.window_pages) pools_->main.release(p);
    for (int32_t p : l.compressed_pages) pools_->main.release(p);
    for (int32_t p : l.index_pages) pools_->indexer.release(p);
  }
  layers_.clear();
  pools_ = nullptr;
}

int64_t PrefixSnapshot::pages_held() const {
  int64_t n = 0;
  for (const Layer& l : layers_)
    n += static_cast<int64_t>(l.window_pages.size() + l.compressed_pages.size() +
                              l.index_pages.size());
  return n;
}

}  // namespace tessera
