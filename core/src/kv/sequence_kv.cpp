#include "kv/sequence_kv.hpp"

#include <algorithm>
#include <utility>

#include "util/check.hpp"

namespace tessera {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

SequenceKv::SequenceKv(const dsv4::ModelConfig& config, KvPools& pools)
    : pools_(pools),
      window_(config.window),
      page_(pools.main.entries_per_page()),
      ratios_(config.compress_ratios) {
  init_layers(config);
}

SequenceKv::SequenceKv(const dsv4::ModelConfig& config, KvPools& pools, const PrefixSnapshot& from)
    : SequenceKv(config, pools) {
  TS_CHECK_EQ(from.layers().size(), layers_.size(), "prefix snapshot layers");
  length_ = from.length();
  may_share_ = true;  // its pages are the snapshot's too
  for (size_t l = 0; l < layers_.size(); ++l) {
    const PrefixSnapshot::Layer& s = from.layers()[l];
    Layer& d = layers_[l];
    d.window_pages.assign(s.window_pages.begin(), s.window_pages.end());
    d.window_first_page = s.window_first_page;
    d.compressed_pages = s.compressed_pages;
    d.index_pages = s.index_pages;
    d.n_compressed = s.n_compressed;
    for_each_page(d, &PagePool::retain);
    if (ratios_[l] > 0) {
      d.compressor.restore(s.compressor);
    }
    if (ratios_[l] == 4) {
      d.index_compressor.restore(s.index_compressor);
    }
  }
}

void SequenceKv::init_layers(const dsv4::ModelConfig& config) {
  for (const int64_t m : ratios_) {
    const auto end = distinct_ratios_.begin() + n_ratios_;
    const auto found = std::find(distinct_ratios_.begin(), end, m);
    if (m > 0 && found == end) {
      TS_CHECK(n_ratios_ < static_cast<int>(distinct_ratios_.size()),
               "more than {} distinct compression ratios", distinct_ratios_.size());
      layers_of_ratio_[static_cast<size_t>(n_ratios_)] = 1;
      distinct_ratios_[static_cast<size_t>(n_ratios_++)] = m;
    } else if (m > 0) {
      ++layers_of_ratio_[static_cast<size_t>(found - distinct_ratios_.begin())];
    }
  }
  layers_.resize(static_cast<size_t>(config.num_layers));
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const int64_t m = config.compress_ratio(l);
    if (m > 0) {
      layers_[l].compressor = dsv4::CompressorState(m, config.head_dim);
    }
    if (m == 4) {
      layers_[l].index_compressor = dsv4::CompressorState(m, config.index_head_dim);
    }
  }
}

SequenceKv::~SequenceKv() {
  for (const Layer& layer : layers_) {
    for_each_page(layer, &PagePool::release);
  }
  if (ring_slot_ >= 0) {
    pools_.rings.give(ring_slot_);
  }
}

void SequenceKv::reset() {
  for (Layer& layer : layers_) {
    for_each_page(layer, &PagePool::release);
    layer.window_pages.clear();
    layer.window_first_page = 0;
    layer.compressed_pages.clear();
    layer.index_pages.clear();
    layer.n_compressed = 0;
    layer.compressor.reset();
    layer.index_compressor.reset();
  }
  length_ = 0;
  may_share_ = false;
  windows_open_ = false;
  pending_.clear();
  ready_.clear();
  if (ring_slot_ >= 0) {
    pools_.rings.give(std::exchange(ring_slot_, -1));
  }
  ring_primed_ = false;
}

int32_t SequenceKv::ring_slot() {
  if (ring_slot_ < 0) {
    ring_slot_ = pools_.rings.take();
    TS_CHECK(ring_slot_ >= 0,
             "compressor rings: all {} slots are held (one per running sequence on the device: "
             "scheduler.max_running_sequences)",
             pools_.rings.slots());
  }
  return ring_slot_;
}

void SequenceKv::for_each_page(const Layer& layer, void (PagePool::*op)(int32_t)) {
  for (const int32_t p : layer.window_pages) {
    (pools_.main.*op)(p);
  }
  for (const int32_t p : layer.compressed_pages) {
    (pools_.main.*op)(p);
  }
  for (const int32_t p : layer.index_pages) {
    (pools_.indexer.*op)(p);
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

int32_t SequenceKv::own_for_write(PagePool& pool, int32_t page, int64_t entry) {
  if (pool.write_needs_copy(page, static_cast<int32_t>(entry))) {
    const int32_t copy = pool.clone(page);
    TS_CHECK(copy >= 0, "kv cache out of pages for a copy-on-write ({} pages in the pool)",
             pool.total_pages());
    pool.release(page);
    page = copy;
  }
  pool.note_write(page, static_cast<int32_t>(entry));
  return page;
}

void SequenceKv::advance(int64_t n_tokens) {
  length_ += n_tokens;
  // Snapshots first: they keep window pages that the release below would otherwise free.
  while (!pending_.empty() && pending_.front().length <= length_) {
    ready_.push_back(build_snapshot(pending_.front()));
    pending_.erase(pending_.begin());
  }
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

PageDemand SequenceKv::pages_needed(int64_t n_tokens) const {
  // One decode token inside the pages every window already holds, with no page shared with the
  // prefix cache (so no copy-on-write): the window pages need nothing. Decode steps end here,
  // reading this object only: the per-layer page lists are cold in the cache after a step's
  // forward (measured ~1 us per sequence on the 50m preset). A token that closes compression
  // windows appends one compressed entry (and an indexer entry at ratio 4) to every layer of that
  // ratio, each of which then holds length_ / m entries: a fresh page exactly when its last page is
  // full. Counted per ratio, without the page lists (the layer count took ~1300 cycles, for ~15% of
  // a step's sequences).
  if (n_tokens == 1 && windows_open_ && !may_share_ && length_ % page_ != 0) {
    PageDemand d;
    for (int i = 0; i < n_ratios_; ++i) {
      const int64_t m = distinct_ratios_[static_cast<size_t>(i)];
      if ((length_ + 1) % m == 0 && (length_ / m) % page_ == 0) {
        d.main += layers_of_ratio_[static_cast<size_t>(i)];
        d.indexer += m == 4 ? layers_of_ratio_[static_cast<size_t>(i)] : 0;
      }
    }
    return d;
  }
  return pages_needed_by_layer(n_tokens);  // (0 for n_tokens <= 0)
}

PageDemand SequenceKv::pages_needed_by_layer(int64_t n_tokens) const {
  PageDemand d;
  if (n_tokens <= 0) {
    return d;
  }
  bool all_open = true;
  const int64_t first = length_, last = length_ + n_tokens - 1;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    if (layer.window_pages.empty()) {
      all_open = false;
      d.main += last / page_ - first / page_ + 1;
    } else {
      const int64_t held_last =
          layer.window_first_page + static_cast<int64_t>(layer.window_pages.size()) - 1;
      d.main += std::max<int64_t>(0, last / page_ - held_last);
      if (first / page_ <= held_last) {
        const int32_t page = layer.window_pages[first / page_ - layer.window_first_page];
        d.main += pools_.main.refcount(page) > 1;
      }
    }
    const int64_t m = ratios_[l];
    if (m == 0) {
      continue;
    }
    const int64_t nc = layer.n_compressed;
    const int64_t added = (length_ + n_tokens) / m - length_ / m;
    if (added == 0) {
      continue;
    }
    const int64_t fresh = ceil_div(nc + added, page_) - ceil_div(nc, page_);
    const bool partial = nc % page_ != 0;
    d.main += fresh + (partial && pools_.main.refcount(layer.compressed_pages.back()) > 1);
    if (m == 4) {
      d.indexer += fresh + (partial && pools_.indexer.refcount(layer.index_pages.back()) > 1);
    }
  }
  if (all_open) {
    windows_open_ = true;  // a window, once open, keeps its newest page
  }
  return d;
}

int64_t SequenceKv::write_window_slot(int64_t layer, int64_t position) {
  TS_CHECK(position >= length_, "window write at position {} below the cached length {}", position,
           length_);
  Layer& l = layers_[layer];
  if (l.window_pages.empty()) {
    l.window_first_page = position / page_;
  }
  const int64_t page_number = position / page_;
  TS_CHECK(page_number >= l.window_first_page, "window slot for position {} already released",
           position);
  while (page_number >= l.window_first_page + static_cast<int64_t>(l.window_pages.size())) {
    l.window_pages.push_back(take(pools_.main));
  }
  int32_t& page = l.window_pages[page_number - l.window_first_page];
  page = own_for_write(pools_.main, page, position % page_);
  return static_cast<int64_t>(page) * page_ + position % page_;
}

int64_t SequenceKv::window_slot(int64_t layer, int64_t position) const {
  const Layer& l = layers_[layer];
  const int64_t index = position / page_ - l.window_first_page;
  TS_CHECK(index >= 0 && index < static_cast<int64_t>(l.window_pages.size()),
           "window slot of position {} is not held (layer {})", position, layer);
  return static_cast<int64_t>(l.window_pages[index]) * page_ + position % page_;
}

int64_t SequenceKv::window_first_position(int64_t layer) const {
  return layers_[layer].window_first_page * page_;
}

int64_t SequenceKv::append_compressed(int64_t layer) {
  Layer& l = layers_[layer];
  const int64_t entry = l.n_compressed++;
  const int64_t offset = entry % page_;
  if (offset == 0) {
    l.compressed_pages.push_back(take(pools_.main));
    if (ratios_[layer] == 4) {
      l.index_pages.push_back(take(pools_.indexer));
    }
  }
  l.compressed_pages.back() = own_for_write(pools_.main, l.compressed_pages.back(), offset);
  if (ratios_[layer] == 4) {
    l.index_pages.back() = own_for_write(pools_.indexer, l.index_pages.back(), offset);
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

void SequenceKv::append_window_slots(int64_t layer, int64_t first, int64_t last,
                                     std::vector<int64_t>& out) const {
  if (last < first) {
    return;
  }
  const Layer& l = layers_[layer];
  const int64_t first_index = first / page_ - l.window_first_page;
  const int64_t last_index = last / page_ - l.window_first_page;
  TS_CHECK(first_index >= 0 && last_index < static_cast<int64_t>(l.window_pages.size()),
           "window slots of positions {}..{} are not held (layer {})", first, last, layer);
  out.reserve(out.size() + static_cast<size_t>(last - first + 1));
  int64_t position = first;
  for (int64_t i = first_index; i <= last_index; ++i) {
    const int64_t base = static_cast<int64_t>(l.window_pages[i]) * page_;
    const int64_t page_end = std::min(last + 1, (l.window_first_page + i + 1) * page_);
    for (int64_t offset = position % page_; position < page_end; ++position, ++offset) {
      out.push_back(base + offset);
    }
  }
}

void SequenceKv::append_compressed_slots(int64_t layer, std::vector<int64_t>& main,
                                         std::vector<int64_t>* indexer) const {
  const Layer& l = layers_[layer];
  const auto append = [&](const auto& pages, std::vector<int64_t>& out) {
    out.reserve(out.size() + static_cast<size_t>(l.n_compressed));
    for (int64_t entry = 0; entry < l.n_compressed; entry += page_) {
      const int64_t base = static_cast<int64_t>(pages[entry / page_]) * page_;
      for (int64_t offset = 0; offset < std::min(page_, l.n_compressed - entry); ++offset) {
        out.push_back(base + offset);
      }
    }
  };
  append(l.compressed_pages, main);
  if (indexer != nullptr) {
    append(l.index_pages, *indexer);
  }
}

void SequenceKv::request_snapshot(int64_t length) {
  TS_CHECK(length > length_ && (pending_.empty() || length > pending_.back().length),
           "snapshot at {} requested behind the cache ({} tokens) or out of order", length,
           length_);
  TS_CHECK(length % page_ == 0, "snapshot at {} is not on a page boundary ({})", length, page_);
  for (int64_t m : ratios_) {
    TS_CHECK(m == 0 || length % m == 0, "snapshot at {} is inside a compressor window ({})", length,
             m);
  }
  PendingSnapshot p;
  p.length = length;
  p.compressor.resize(layers_.size());
  p.index_compressor.resize(layers_.size());
  p.recorded.resize(layers_.size(), 0);
  pending_.push_back(std::move(p));
}

void SequenceKv::record_compressor(int64_t layer, bool indexer, int64_t length_after) {
  for (PendingSnapshot& p : pending_) {
    if (p.length != length_after) {
      continue;
    }
    Layer& l = layers_[layer];
    if (indexer) {
      p.index_compressor[layer] = l.index_compressor.snapshot();
      p.recorded[layer] |= 2;
    } else {
      p.compressor[layer] = l.compressor.snapshot();
      p.recorded[layer] |= 1;
    }
  }
}

int64_t SequenceKv::next_pending_snapshot(int64_t after) const {
  int64_t next = 0;
  for (const PendingSnapshot& p : pending_) {
    if (p.length > after && (next == 0 || p.length < next)) {
      next = p.length;
    }
  }
  return next;
}

dsv4::CompressorSnapshot& SequenceKv::snapshot_compressor(int64_t layer, bool indexer,
                                                          int64_t length) {
  const auto it = std::find_if(pending_.begin(), pending_.end(),
                               [&](const PendingSnapshot& p) { return p.length == length; });
  TS_CHECK(it != pending_.end(), "no snapshot requested at {}", length);
  it->recorded[layer] |= indexer ? 2 : 1;
  return indexer ? it->index_compressor[layer] : it->compressor[layer];
}

PrefixSnapshot SequenceKv::build_snapshot(const PendingSnapshot& pending) {
  may_share_ = true;  // the snapshot retains some of this sequence's pages
  const int64_t L = pending.length;
  std::vector<PrefixSnapshot::Layer> out(layers_.size());
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    PrefixSnapshot::Layer& s = out[i];
    // The token at position L sees positions >= L - window + 1 (all before L are written).
    const int64_t first_page = std::max<int64_t>(0, L - window_ + 1) / page_;
    const int64_t last_page = (L - 1) / page_;
    TS_CHECK(first_page >= l.window_first_page &&
                 last_page < l.window_first_page + static_cast<int64_t>(l.window_pages.size()),
             "snapshot at {}: window pages {}..{} not held", L, first_page, last_page);
    s.window_first_page = first_page;
    for (int64_t p = first_page; p <= last_page; ++p) {
      s.window_pages.push_back(l.window_pages[p - l.window_first_page]);
    }
    const int64_t m = ratios_[i];
    if (m > 0) {
      const uint8_t want = m == 4 ? 3 : 1;
      TS_CHECK(pending.recorded[i] == want,
               "snapshot at {}: layer {} compressor state was not recorded (model hook missing)", L,
               i);
      s.n_compressed = L / m;
      TS_CHECK(s.n_compressed <= l.n_compressed, "snapshot at {}: {} compressed entries of {}", L,
               s.n_compressed, l.n_compressed);
      const auto pages = static_cast<size_t>(ceil_div(s.n_compressed, page_));
      s.compressed_pages.assign(l.compressed_pages.begin(), l.compressed_pages.begin() + pages);
      if (m == 4) {
        s.index_pages.assign(l.index_pages.begin(), l.index_pages.begin() + pages);
      }
      s.compressor = pending.compressor[i];
      if (m == 4) {
        s.index_compressor = pending.index_compressor[i];
      }
    }
    for (int32_t p : s.window_pages) {
      pools_.main.retain(p);
    }
    for (int32_t p : s.compressed_pages) {
      pools_.main.retain(p);
    }
    for (int32_t p : s.index_pages) {
      pools_.indexer.retain(p);
    }
  }
  return PrefixSnapshot(pools_, L, std::move(out));
}

std::vector<PrefixSnapshot> SequenceKv::take_snapshots() { return std::exchange(ready_, {}); }

int64_t SequenceKv::compressor_bytes() const {
  int64_t n = 0;
  for (const Layer& l : layers_) {
    n += l.compressor.state_bytes() + l.index_compressor.state_bytes();
  }
  return n;
}

int64_t SequenceKv::pages_held() const {
  int64_t n = 0;
  for (const Layer& l : layers_) {
    n += static_cast<int64_t>(l.window_pages.size() + l.compressed_pages.size() +
                              l.index_pages.size());
  }
  return n;
}

}  // namespace tessera
