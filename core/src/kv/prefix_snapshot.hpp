// The cache state of a sequence at a prefix-cache boundary (docs/engine.md "Prefix cache"): for
// every layer the window pages the next token still sees, the compressed-entry and indexer-key
// pages written so far, and the compressor states (previous window of overlapping compressors).
// It holds a reference on every page it names, so pages stay valid while the snapshot lives even
// after the sequence that wrote them is gone; a sequence restored from it shares the pages and
// copies one before writing into it (PagePool copy-on-write).
// Move-only; owned by one rank's thread.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/compressor_state.hpp"
#include "kv/page_pool.hpp"

namespace tessera {

struct KvPools;

class PrefixSnapshot {
 public:
  struct Layer {
    std::vector<int32_t> window_pages;  // pages window_first_page, window_first_page + 1, ...
    int64_t window_first_page = 0;
    std::vector<int32_t> compressed_pages;
    std::vector<int32_t> index_pages;
    int64_t n_compressed = 0;
    dsv4::CompressorSnapshot compressor;
    dsv4::CompressorSnapshot index_compressor;
  };

  PrefixSnapshot(KvPools& pools, int64_t length, std::vector<Layer> layers);  // takes the refs
  ~PrefixSnapshot();
  PrefixSnapshot(PrefixSnapshot&& other) noexcept;
  PrefixSnapshot& operator=(PrefixSnapshot&& other) noexcept;
  PrefixSnapshot(const PrefixSnapshot&) = delete;
  PrefixSnapshot& operator=(const PrefixSnapshot&) = delete;

  int64_t length() const { return length_; }  // tokens covered
  const std::vector<Layer>& layers() const { return layers_; }
  int64_t pages_held() const;

 private:
  void release() noexcept;

  KvPools* pools_ = nullptr;
  int64_t length_ = 0;
  std::vector<Layer> layers_;
};

}  // namespace tessera
