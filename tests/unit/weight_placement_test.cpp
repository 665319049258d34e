// Linear weights placed in one huge-page arena (model/weight_placement.hpp, util/huge_page_arena):
// every linear weight moves, keeps every value and its storage type, nothing else moves, copies go
// back to the heap, and the shipped model gives bit-identical logits from placed and unplaced
// weights.
#include "model/weight_placement.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "engine_harness.hpp"
#include "model/bf16_weights.hpp"
#include "model/weight_panels.hpp"
#include "util/huge_page_arena.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {
namespace {

const std::filesystem::path kShipped =
    std::filesystem::path(TESSERA_SOURCE_DIR) / "models/tiny-dsv4";

std::vector<const Tensor*> linear_weights(const ModelWeights& w) {
  std::vector<const Tensor*> out;
  for_each_linear_weight(w, [&](const Tensor& t) { out.push_back(&t); });
  return out;
}

// The arena of whichever storage holds t (rows or panels, fp32 or bf16).
const HugePageArena* arena_of(const Tensor& t) {
  if (t.in_bf16_panels()) {
    return t.bf16_panels.get_allocator().arena().get();
  }
  if (t.in_panels()) {
    return t.panels.get_allocator().arena().get();
  }
  return t.in_bf16() ? t.bf16.get_allocator().arena().get() : t.data.get_allocator().arena().get();
}

TEST(WeightPlacement, EveryLinearWeightMovesIntoOneArenaWithEveryValue) {
  const ModelConfig config = load_model_config(kShipped);
  ModelWeights w = load_model_weights(kShipped, config);
  keep_linear_weights_in_bf16(w);  // bf16 and fp32 (the mHC mixes) linear weights both
  const ModelWeights original = w;
  const PlacementSummary s = place_linear_weights_on_huge_pages(w);

  const std::vector<const Tensor*> placed = linear_weights(w), before = linear_weights(original);
  ASSERT_EQ(placed.size(), before.size());
  const HugePageArena* arena = arena_of(*placed[0]);
  ASSERT_NE(arena, nullptr) << "the vocabulary head was not placed";
  size_t bytes = 0, in_bf16 = 0;
  for (size_t i = 0; i < placed.size(); ++i) {
    const Tensor& p = *placed[i];
    const Tensor& b = *before[i];
    EXPECT_EQ(arena_of(p), arena) << "linear weight " << i << " is not in the arena";
    EXPECT_EQ(p.shape, b.shape) << i;
    ASSERT_EQ(p.in_bf16(), b.in_bf16()) << i;
    in_bf16 += p.in_bf16();
    EXPECT_TRUE(std::equal(p.data.begin(), p.data.end(), b.data.begin(), b.data.end())) << i;
    EXPECT_TRUE(std::equal(p.bf16.begin(), p.bf16.end(), b.bf16.begin(), b.bf16.end())) << i;
    const void* at = p.in_bf16() ? static_cast<const void*>(p.bf16.data()) : p.data.data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(at) % 64, 0u) << i;
    bytes += (static_cast<size_t>(p.numel()) * (p.in_bf16() ? 2 : 4) + 63) / 64 * 64;
  }
  EXPECT_GT(in_bf16, 0u);
  EXPECT_LT(in_bf16, placed.size());
  EXPECT_EQ(s.bytes, bytes);
  EXPECT_EQ(arena->reserved_bytes(), bytes);  // one block, exactly the weights
  // Not linear weights: where they were.
  EXPECT_EQ(w.embed.data.get_allocator().arena(), nullptr);
  EXPECT_EQ(w.layers[0].attn_norm.data.get_allocator().arena(), nullptr);
  EXPECT_EQ(w.layers[1].attn.compressor->ape.data.get_allocator().arena(), nullptr);
  EXPECT_EQ(w.embed.data, original.embed.data);
}

TEST(WeightPlacement, ACopyOfPlacedWeightsIsOnTheHeap) {
  const ModelConfig config = load_model_config(kShipped);
  ModelWeights w = load_model_weights(kShipped, config);
  place_linear_weights_on_huge_pages(w);
  ASSERT_NE(w.head.data.get_allocator().arena(), nullptr);
  const ModelWeights copy = w;
  EXPECT_EQ(copy.head.data.get_allocator().arena(), nullptr);
  EXPECT_EQ(copy.head.data, w.head.data);
  EXPECT_EQ(copy.layers[2].ffn.experts[3].w1.data, w.layers[2].ffn.experts[3].w1.data);
}

// Logits of a prefill of three prompts and four greedy decode steps through `rt`'s model.
std::vector<float> logits_of(Runtime& rt) {
  std::vector<float> all;
  engine_test::forward_greedy_steps(
      rt,
      {engine_test::make_prompt(1, 40, 4096), engine_test::make_prompt(2, 9, 4096),
       engine_test::make_prompt(3, 130, 4096)},
      5, [&](int /*step*/, const Logits& logits, const auto& /*inputs*/) {
        all.insert(all.end(), logits.values.begin(), logits.values.end());
      });
  return all;
}

TEST(WeightPlacement, PlacedWeightsGiveBitIdenticalLogits) {
  RuntimeOptions o = engine_test::runtime_options(0.05);
  o.model_dir = kShipped;
  Runtime loaded(o);  // the runtime places what it loads
  ASSERT_NE(arena_of(loaded.weights()->head), nullptr);
  const ModelConfig config = load_model_config(kShipped);
  ModelWeights heap = load_model_weights(kShipped, config);
  keep_linear_weights_in_bf16(heap);
  pack_linear_weights_into_panels(heap, o.bf16_activations);  // as the runtime does
  Runtime unplaced(o, config, std::make_shared<const ModelWeights>(std::move(heap)));
  ASSERT_EQ(arena_of(unplaced.weights()->head), nullptr);
  const std::vector<float> a = logits_of(loaded), b = logits_of(unplaced);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  size_t differing = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    differing += std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]);
  }
  EXPECT_EQ(differing, 0u) << "of " << a.size() << " logits";
}

TEST(HugePageArena, AlignsZeroFillsAndGrowsByBlocks) {
  HugePageArena arena(kHugePageBytes);
  auto* a = static_cast<uint8_t*>(arena.allocate(100));
  auto* b = static_cast<uint8_t*>(arena.allocate(1));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kHugePageBytes, 0u);  // a block starts on a page
  EXPECT_EQ(b, a + 128);                                           // 64-byte granules
  EXPECT_TRUE(std::all_of(a, a + 192, [](uint8_t v) { return v == 0; }));
  auto* big = static_cast<uint8_t*>(arena.allocate(3 * kHugePageBytes));  // a block of its own
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % kHugePageBytes, 0u);
  EXPECT_EQ(arena.reserved_bytes(), 4 * kHugePageBytes);
  big[3 * kHugePageBytes - 1] = 7;                      // the whole request is writable
  auto* c = static_cast<uint8_t*>(arena.allocate(64));  // the big block is full: a new one
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % kHugePageBytes, 0u);
  EXPECT_EQ(arena.reserved_bytes(), 5 * kHugePageBytes);
}

}  // namespace
}  // namespace tessera::dsv4
