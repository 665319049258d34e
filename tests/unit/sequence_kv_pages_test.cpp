// SequenceKv::pages_needed answers a one-token decode from the sequence object alone when no page
// or compression-window boundary is crossed and no page is shared (the scheduler asks it for every
// running sequence every step). Its answer must be the per-layer count's at every step: from the
// first token, across page and window boundaries, with pages shared with a prefix snapshot, and
// for a sequence restored from one.
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

}  // namespace
}  // namespace tessera
