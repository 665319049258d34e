// One sequence's cache bookkeeping, per layer: the window pages (positions that the 128-token
// window can still see), the compressed-entry pages, the indexer-key pages (CSA), and the two
// compressor states. Pages come from pools shared by all sequences and layers and go back when
// they leave the window or when the sequence is destroyed.
// Owned and used by the engine loop thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "kv/page_pool.hpp"
#include "model/compressor.hpp"
#include "model/dsv4_config.hpp"

namespace tessera {

struct KvPools {
  PagePool main;     // window + compressed latent entries
  PagePool indexer;  // lightning-indexer keys
};

class SequenceKv {
 public:
  SequenceKv(const dsv4::ModelConfig& config, KvPools& pools);
  ~SequenceKv();
  SequenceKv(const SequenceKv&) = delete;
  SequenceKv& operator=(const SequenceKv&) = delete;

  // Tokens whose kv is in the cache; the next token's position.
  int64_t length() const { return length_; }
  void advance(int64_t n_tokens);  // after a forward: marks tokens cached, frees old window pages

  // Main-cache slot of `position` in the window of `layer`, allocating its page on first use.
  int64_t window_slot(int64_t layer, int64_t position);
  // First position whose window page is still held (start of the slot list given to attention).
  int64_t window_first_position(int64_t layer) const;
  // Appends a compressed entry (and its indexer key slot for CSA layers); returns the main slot.
  int64_t append_compressed(int64_t layer);
  int64_t compressed_slot(int64_t layer, int64_t entry) const;
  int64_t indexer_slot(int64_t layer, int64_t entry) const;
  int64_t n_compressed(int64_t layer) const;

  dsv4::CompressorState& compressor(int64_t layer) { return layers_[layer].compressor; }
  dsv4::CompressorState& index_compressor(int64_t layer) { return layers_[layer].index_compressor; }

  int64_t pages_held() const;

 private:
  struct Layer {
    std::deque<int32_t> window_pages;
    int64_t window_first_page = 0;  // page number (position / P) of window_pages.front()
    std::vector<int32_t> compressed_pages;
    std::vector<int32_t> index_pages;
    int64_t n_compressed = 0;
    dsv4::CompressorState compressor;
    dsv4::CompressorState index_compressor;
  };
  int32_t take(PagePool& pool);

  KvPools& pools_;
  int64_t window_;
  int64_t page_;  // entries per page
  int64_t length_ = 0;
  std::vector<int64_t> ratios_;
  std::vector<Layer> layers_;
};

}  // namespace tessera
