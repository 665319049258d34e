// SequenceKv::pages_needed answers a one-token decode from the sequence object alone when no
// window page boundary is crossed and no page is shared, counting the compressed pages the token's
// closing windows take per ratio (the scheduler asks it for every running sequence every step). Its
// answer must be the per-layer count's at every step: from the first token, across page and window
// boundaries, with pages shared with a prefix snapshot, and for a sequence restored from one.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "engine_harness.hpp"
#include "kv/sequence_kv.hpp"
#include "runtime/runtime.hpp"

namespace tessera {
namespace {

// Decodes `steps` tokens into seq one at a time, checking the shortcut before each.
void decode_checking(Runtime& rt, SequenceKv& seq, int64_t steps, int32_t first_token) {
  int32_t token = first_token;
  for (int64_t i = 0; i < steps; ++i) {
    const PageDemand quick = seq.pages_needed(1), by_layer = seq.pages_needed_by_layer(1);
    ASSERT_EQ(quick.main, by_layer.main) << "at length " << seq.length();
    ASSERT_EQ(quick.indexer, by_layer.indexer) << "at length " << seq.length();
    dsv4::ForwardBatch step;
    step.chunks.push_back({&seq, std::span<const int32_t>(&token, 1), false});
    const dsv4::Logits logits = rt.model().forward(step);
    token = static_cast<int32_t>((token * 7 + 3) % logits.vocab);
  }
}

TEST(SequenceKvPages, OneTokenShortcutMatchesTheLayerCount) {
  Runtime rt(engine_test::runtime_options(0.05));
  const int64_t page = rt.pools().main.entries_per_page();
  int64_t block = page;
  for (const int64_t m : rt.model_config().compress_ratios)
    if (m > 0) block = std::lcm(block, m);

  auto plain = rt.new_sequence();
  decode_checking(rt, *plain, 3 * block + 5, 11);

  // Pages shared with a snapshot: the window page being written needs a copy.
  auto shared = rt.new_sequence();
  shared->request_snapshot(block);
  decode_checking(rt, *shared, block + 3, 12);
  std::vector<PrefixSnapshot> snapshots = shared->take_snapshots();
  ASSERT_EQ(snapshots.size(), 1u);
  decode_checking(rt, *shared, block, 13);

  // Restored from the snapshot: every page starts shared.
  SequenceKv restored(rt.model_config(), rt.pools(), snapshots.front());
  decode_checking(rt, restored, block + 7, 14);
}

// append_window_slots / append_compressed_slots list, page by page, exactly the slots
// window_slot / compressed_slot / indexer_slot give one at a time: across page boundaries, for
// windows that start inside a page, and for a sequence restored from a snapshot (shared pages).
void expect_slot_lists_match(const Runtime& rt, const SequenceKv& seq) {
  const dsv4::ModelConfig& c = rt.model_config();
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    const int64_t first = seq.window_first_position(layer), last = seq.length() - 1;
    for (const int64_t from : {first, first + 1, last}) {
      std::vector<int64_t> listed{-7};  // appended after what is there
      seq.append_window_slots(layer, from, last, listed);
      ASSERT_EQ(static_cast<int64_t>(listed.size()), last - from + 2) << "layer " << layer;
      EXPECT_EQ(listed.front(), -7);
      for (int64_t p = from; p <= last; ++p) {
        ASSERT_EQ(listed[static_cast<size_t>(p - from + 1)], seq.window_slot(layer, p))
            << "layer " << layer << " position " << p;
      }
    }
    std::vector<int64_t> none;
    seq.append_window_slots(layer, last + 1, last, none);
    EXPECT_TRUE(none.empty());
    std::vector<int64_t> main, indexer;
    const bool csa = c.compress_ratio(layer) == 4;
    seq.append_compressed_slots(layer, main, csa ? &indexer : nullptr);
    ASSERT_EQ(static_cast<int64_t>(main.size()), seq.n_compressed(layer));
    ASSERT_EQ(static_cast<int64_t>(indexer.size()), csa ? seq.n_compressed(layer) : 0);
    for (int64_t k = 0; k < seq.n_compressed(layer); ++k) {
      EXPECT_EQ(main[static_cast<size_t>(k)], seq.compressed_slot(layer, k)) << layer << " " << k;
      if (csa) {
        EXPECT_EQ(indexer[static_cast<size_t>(k)], seq.indexer_slot(layer, k)) << layer << " " << k;
      }
    }
  }
}

TEST(SequenceKvPages, SlotListsMatchTheSlotsOneAtATime) {
  Runtime rt(engine_test::runtime_options(0.05));
  const int64_t page = rt.pools().main.entries_per_page();
  int64_t block = page;  // snapshots sit at compressor-window boundaries
  for (const int64_t m : rt.model_config().compress_ratios) {
    if (m > 0) {
      block = std::lcm(block, m);
    }
  }
  auto seq = rt.new_sequence();
  seq->request_snapshot(block);
  decode_checking(rt, *seq, block, 21);
  std::vector<PrefixSnapshot> snapshots = seq->take_snapshots();
  ASSERT_EQ(snapshots.size(), 1u);
  for (int64_t step = 0; step < 3 * page + 5; step += page / 2 + 1) {
    decode_checking(rt, *seq, page / 2 + 1, 22);
    expect_slot_lists_match(rt, *seq);
  }
  SequenceKv restored(rt.model_config(), rt.pools(), snapshots.front());
  decode_checking(rt, restored, page + 3, 23);
  expect_slot_lists_match(rt, restored);
}

}  // namespace
}  // namespace tessera
