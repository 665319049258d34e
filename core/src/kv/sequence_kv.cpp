#include "kv/sequence_kv.hpp"

#include "util/check.hpp"

namespace tessera {

SequenceKv::SequenceKv(const dsv4::ModelConfig& config, KvPools& pools)
    : pools_(pools),
      window_(config.window),
      page_(pools.main.entries_per_page()),
      ratios_(config.compress_ratios),
      layers_(static_cast<size_t>(config.num_layers)) {
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const int64_t m = config.compress_ratio(l);
    if (m > 0) layers_[l].compressor = dsv4::CompressorState(m, config.head_dim);
    if (m == 4) layers_[l].index_compressor = dsv4::CompressorState(m, config.index_head_dim);
  }
}

SequenceKv::~SequenceKv() {
  for (Layer& layer : layers_) {
    for (int32_t p : layer.window_pages) pools_.main.release(p);
    for (int32_t p : layer.compressed_pages) pools_.main.release(p);
    for (int32_t p : layer.index_pages) pools_.indexer.release(p);
  }
}

int32_t SequenceKv::take(PagePool& pool) {
  const int32_t page = pool.allocate();
  TS_CHECK(page >= 0,
           "kv cache out of pages ({} pages in the pool): raise kv_cache.memory_gib or "
           "lower the load",
           pool.total_pages());
  return page;
}

void SequenceKv::advance(int64_t n_tokens) {
  length_ += n_tokens;
  // The next query (position length_) sees positions >= length_ - window + 1.
  const int64_t oldest_needed = std::max<int64_t>(0, length_ - window_ + 1);
  for (Layer& layer : layers_) {
    while (!layer.window_pages.empty() && (layer.window_first_page + 1) * page_ <= oldest_needed) {
      pools_.main.release(layer.window_pages.front());
      layer.window_pages.pop_front();
      ++layer.window_first_page;
    }
  }
}

int64_t SequenceKv::window_slot(int64_t layer, int64_t position) {
  Layer& l = layers_[layer];
  if (l.window_pages.empty()) l.window_first_page = position / page_;
  const int64_t page_number = position / page_;
  TS_CHECK(page_number >= l.window_first_page, "window slot for position {} already released",
           position);
  while (page_number >= l.window_first_page + static_cast<int64_t>(l.window_pages.size()))
    l.window_pages.push_back(take(pools_.main));
  return static_cast<int64_t>(l.window_pages[page_number - l.window_first_page]) * page_ +
         position % page_;
}

int64_t SequenceKv::window_first_position(int64_t layer) const {
  return layers_[layer].window_first_page * page_;
}

int64_t SequenceKv::append_compressed(int64_t layer) {
  Layer& l = layers_[layer];
  const int64_t entry = l.n_compressed++;
  if (entry % page_ == 0) {
    l.compressed_pages.push_back(take(pools_.main));
    if (ratios_[layer] == 4) l.index_pages.push_back(take(pools_.indexer));
  }
  return compressed_slot(layer, entry);
}

int64_t SequenceKv::compressed_slot(int64_t layer, int64_t entry) const {
  return static_cast<int64_t>(layers_[layer].compressed_pages[entry / page_]) * page_ +
         entry % page_;
}

int64_t SequenceKv::indexer_slot(int64_t layer, int64_t entry) const {
  return static_cast<int64_t>(layers_[layer].index_pages[entry / page_]) * page_ + entry % page_;
}

int64_t SequenceKv::n_compressed(int64_t layer) const { return layers_[layer].n_compressed; }

int64_t SequenceKv::pages_held() const {
  int64_t n = 0;
  for (const Layer& l : layers_)
    n += static_cast<int64_t>(l.window_pages.size() + l.compressed_pages.size() +
                              l.index_pages.size());
  return n;
}

}  // namespace tessera
