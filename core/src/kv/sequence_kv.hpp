// One sequence's cache bookkeeping, per layer: the window pages (positions that the 128-token
// window can still see), the compressed-entry pages, the indexer-key pages (CSA), and the two
// compressor states. Pages come from pools shared by all sequences and layers and go back when
// they leave the window or when the sequence is destroyed. Pages may be shared with prefix
// snapshots (kv/prefix_snapshot.hpp); a shared page is copied before it is written.
// Owned and used by one rank's thread only (docs/engine.md).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "kv/compressor_rings.hpp"
#include "kv/compressor_state.hpp"
#include "kv/page_pool.hpp"
#include "kv/prefix_snapshot.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera {

struct KvPools {
  PagePool main;          // window + compressed latent entries
  PagePool indexer;       // lightning-indexer keys
  CompressorRings rings;  // the device forward's compressor state (none for the host forward)
};

// Pages a step may take from each pool.
struct PageDemand {
  int64_t main = 0;
  int64_t indexer = 0;
  bool fits(const KvPools& pools) const {
    return main <= pools.main.free_pages() && indexer <= pools.indexer.free_pages();
  }
};

class SequenceKv {
 public:
  SequenceKv(const dsv4::ModelConfig& config, KvPools& pools);
  // Resumes from a prefix snapshot: shares its pages, copies its compressor states;
  // length() == from.length().
  SequenceKv(const dsv4::ModelConfig& config, KvPools& pools, const PrefixSnapshot& from);
  ~SequenceKv();
  SequenceKv(const SequenceKv&) = delete;
  SequenceKv& operator=(const SequenceKv&) = delete;

  // Back to an empty sequence, as a new SequenceKv(config, pools) is: every page released, no
  // snapshot pending, the compressors' windows empty. The lists and compressor buffers keep their
  // memory, so a rank reuses a finished sequence's object for the next one (executor/rank.hpp).
  void reset();

  // Tokens whose kv is in the cache; the next token's position.
  int64_t length() const { return length_; }
  // After a forward: marks tokens cached, builds requested snapshots, frees old window pages.
  void advance(int64_t n_tokens);

  // The most pages the next n_tokens can take (new window pages, new compressed / indexer pages,
  // a copy of every shared page written into: counted whenever the page is shared, since another
  // holder may write its frontier entry first in the same step). Pages that advance() frees
  // afterwards are not counted.
  PageDemand pages_needed(int64_t n_tokens) const;
  // The same, always from the per-layer page lists (no one-token shortcut): for tests.
  PageDemand pages_needed_by_layer(int64_t n_tokens) const;

  // Main-cache slot where `position` (>= length()) of `layer` is written; allocates its page, or
  // copies it when shared.
  int64_t write_window_slot(int64_t layer, int64_t position);
  // Main-cache slot of a written position still in the window.
  int64_t window_slot(int64_t layer, int64_t position) const;
  // First position whose window page is still held (start of the slot list given to attention).
  int64_t window_first_position(int64_t layer) const;
  // Appends a compressed entry (and its indexer key slot for CSA layers); returns the main slot.
  int64_t append_compressed(int64_t layer);
  int64_t compressed_slot(int64_t layer, int64_t entry) const;
  int64_t indexer_slot(int64_t layer, int64_t entry) const;
  int64_t n_compressed(int64_t layer) const;
  // The slots of positions [first, last] still in the window, as window_slot gives them, appended
  // to `out` page by page (the attention batch lists them for every sequence and layer of a step:
  // one division per position was ~half of describing a 64-sequence batch).
  void append_window_slots(int64_t layer, int64_t first, int64_t last,
                           std::vector<int64_t>& out) const;
  // compressed_slot (and, given `indexer`, indexer_slot) of entries [0, n_compressed) appended.
  void append_compressed_slots(int64_t layer, std::vector<int64_t>& main,
                               std::vector<int64_t>* indexer) const;

  // The host forward's compressor states. A sequence restored from a snapshot holds the
  // snapshot's states here too, from which the device forward loads its ring.
  dsv4::CompressorState& compressor(int64_t layer) { return layers_[layer].compressor; }
  dsv4::CompressorState& index_compressor(int64_t layer) { return layers_[layer].index_compressor; }

  // Prefix snapshots. The engine asks for one at `length` (in the next forward's chunk; a
  // multiple of the page size and of every compress ratio); the model calls compressor_pushed
  // after each compressor push; advance() builds the snapshot before it frees window pages, and
  // take_snapshots() hands the finished ones over (in increasing length).
  void request_snapshot(int64_t length);
  void compressor_pushed(int64_t layer, bool indexer, int64_t length_after) {
    if (!pending_.empty()) {
      record_compressor(layer, indexer, length_after);
    }
  }
  std::vector<PrefixSnapshot> take_snapshots();
  // The device forward's side of the same: the smallest length of a snapshot requested and not
  // built yet that is greater than `after` (0 when there is none), and the compressor state of
  // the one at `length` for the caller to fill before advance() (marked recorded).
  int64_t next_pending_snapshot(int64_t after) const;
  dsv4::CompressorSnapshot& snapshot_compressor(int64_t layer, bool indexer, int64_t length);

  // The device forward's compressor ring slot (kv/compressor_rings.hpp): taken at the first call,
  // held until reset() or destruction. Throws when every slot is held.
  int32_t ring_slot();
  // Whether the rings hold this sequence's last windows: false until its first device step (a
  // sequence restored from a snapshot loads them from its compressor states then).
  bool ring_primed() const { return ring_primed_; }
  void set_ring_primed() { ring_primed_ = true; }

  int64_t pages_held() const;
  // The compressors' window buffers (what a kept object holds besides its lists).
  int64_t compressor_bytes() const;

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
  struct PendingSnapshot {
    int64_t length = 0;
    std::vector<dsv4::CompressorSnapshot> compressor, index_compressor;  // [layers]
    std::vector<uint8_t> recorded;  // [layers] bit 1: compressor, bit 2: index compressor
  };
  void init_layers(const dsv4::ModelConfig& config);
  // Applies op (retain or release) to every page the layer holds, each in its own pool.
  void for_each_page(const Layer& layer, void (PagePool::*op)(int32_t));
  int32_t take(PagePool& pool);
  // Copies `page` when another holder may read the entry about to be written.
  int32_t own_for_write(PagePool& pool, int32_t page, int64_t entry);
  void record_compressor(int64_t layer, bool indexer, int64_t length_after);
  PrefixSnapshot build_snapshot(const PendingSnapshot& pending);

  KvPools& pools_;
  int64_t window_;
  int64_t page_;  // entries per page
  int64_t length_ = 0;
  // For pages_needed's one-token shortcut (it reads only these, not the per-layer page lists):
  std::array<int64_t, 4> distinct_ratios_{};  // the nonzero compression ratios, first n_ratios_
  std::array<int64_t, 4> layers_of_ratio_{};  // how many layers have each of them
  int n_ratios_ = 0;
  // Restored from or snapshotted into the prefix cache. Defensive: snapshots sit on page and
  // window boundaries, so a shared page is only written after one (where the shortcut is off).
  bool may_share_ = false;
  mutable bool windows_open_ = false;  // every layer's window holds a page (true once seen)
  std::vector<int64_t> ratios_;
  std::vector<Layer> layers_;
  std::vector<PendingSnapshot> pending_;
  std::vector<PrefixSnapshot> ready_;
  int32_t ring_slot_ = -1;
  bool ring_primed_ = false;
};

}  // namespace tessera
