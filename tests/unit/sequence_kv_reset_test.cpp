// SequenceKv::reset turns a used sequence back into a new one (a rank reuses finished sequences'
// objects, executor/rank.hpp): every page goes back to the pools, and the same tokens then give
// bit-identical logits, compressed-entry counts and page demands as in a freshly built object —
// across the compressors' window closes (ratio 4 with its overlapping previous window, ratio
// 128) and the sliding window, after the object was left mid-window with a snapshot pending.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "engine_harness.hpp"
#include "kv/sequence_kv.hpp"
#include "runtime/runtime.hpp"

namespace tessera {
namespace {

std::vector<int32_t> tokens_from(int32_t seed, int64_t n, int64_t vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    t[static_cast<size_t>(i)] = static_cast<int32_t>((seed + 37 * i) % vocab);
  }
  return t;
}

// What one step of `seq` shows: its logits and, per layer, its compressed entries; the demand
// of the next token.
struct StepView {
  std::vector<float> logits;
  std::vector<int64_t> compressed;
  int64_t main_pages = 0, indexer_pages = 0;
};

std::vector<StepView> run(Runtime& rt, SequenceKv& seq, std::span<const int32_t> prompt,
                          std::span<const int32_t> decode) {
  std::vector<StepView> views;
  const auto step = [&](std::span<const int32_t> tokens) {
    dsv4::ForwardBatch batch;
    batch.chunks.push_back({&seq, tokens, false});
    const dsv4::Logits logits = rt.model().forward(batch);
    StepView v;
    v.logits.assign(logits.row(0), logits.row(0) + logits.vocab);
    for (int64_t l = 0; l < rt.model_config().num_layers; ++l) {
      v.compressed.push_back(seq.n_compressed(l));
    }
    const PageDemand d = seq.pages_needed(1);
    v.main_pages = d.main;
    v.indexer_pages = d.indexer;
    views.push_back(std::move(v));
  };
  step(prompt);
  for (const int32_t t : decode) {
    step(std::span<const int32_t>(&t, 1));
  }
  return views;
}

TEST(SequenceKvReset, ResetSequenceMatchesANewOne) {
  Runtime rt(engine_test::runtime_options(0.05));
  const int64_t vocab = rt.model_config().vocab_size;
  const int64_t free_main = rt.pools().main.free_pages();
  const int64_t free_indexer = rt.pools().indexer.free_pages();

  // Used past the window and several compressed windows of each ratio, left 3 tokens into a
  // window with a snapshot still pending.
  auto used = rt.new_sequence();
  used->request_snapshot(256);
  const std::vector<int32_t> earlier = tokens_from(5, 150, vocab);
  run(rt, *used, earlier, tokens_from(9, 45, vocab));
  ASSERT_GT(used->pages_held(), 0);
  used->reset();
  EXPECT_EQ(used->length(), 0);
  EXPECT_EQ(used->pages_held(), 0);
  EXPECT_EQ(rt.pools().main.free_pages(), free_main);
  EXPECT_EQ(rt.pools().indexer.free_pages(), free_indexer);
  EXPECT_TRUE(used->take_snapshots().empty());

  const std::vector<int32_t> prompt = tokens_from(1, 133, vocab),
                             decode = tokens_from(3, 140, vocab);
  const std::vector<StepView> again = run(rt, *used, prompt, decode);
  auto fresh = rt.new_sequence();
  const std::vector<StepView> expected = run(rt, *fresh, prompt, decode);
  ASSERT_EQ(again.size(), expected.size());
  for (size_t s = 0; s < again.size(); ++s) {
    ASSERT_EQ(again[s].compressed, expected[s].compressed) << "step " << s;
    ASSERT_EQ(again[s].main_pages, expected[s].main_pages) << "step " << s;
    ASSERT_EQ(again[s].indexer_pages, expected[s].indexer_pages) << "step " << s;
    for (size_t i = 0; i < again[s].logits.size(); ++i) {
      ASSERT_EQ(again[s].logits[i], expected[s].logits[i]) << "step " << s << " logit " << i;
    }
  }
}

}  // namespace
}  // namespace tessera
