// The lightning indexer scores only the compressed entries visible to each query: its work grows
// with the real context, never with max_context (the 17x cost of the incident behind Tessera).
#include <gtest/gtest.h>

#include "parity_fixture.hpp"
#include "runtime/runtime.hpp"

namespace tessera {
namespace {

int64_t expected_scored(const dsv4::ModelConfig& cfg, int64_t first, int64_t n) {
  int64_t csa_layers = 0;
  for (int64_t l = 0; l < cfg.num_layers; ++l) csa_layers += cfg.compress_ratio(l) == 4;
  int64_t per_layer = 0;
  for (int64_t p = first; p < first + n; ++p) per_layer += (p + 1) / 4;  // entries with (k+1)*4 <= p+1
  return csa_layers * per_layer;
}

int64_t scored_for(int64_t max_context, int64_t prompt_len, int64_t* expected) {
  const auto names = testing::parity_fixture_names();
  EXPECT_FALSE(names.empty());
  const auto f = testing::load_parity_fixture(names.front());
  RuntimeOptions o;
  o.model_dir = f.dir;
  o.plugin_dirs = {TESSERA_PLUGIN_DIR};
  o.memory_gib = 0.05;
  o.max_context = max_context;
  Runtime rt(o);
  auto seq = rt.new_sequence();
  dsv4::ForwardStats stats;
  dsv4::ForwardBatch prefill;
  prefill.chunks.push_back({seq.get(), std::span<const int32_t>(f.prompt.data(), prompt_len), false});
  rt.model().forward(prefill, &stats);
  for (int i = 0; i < 8; ++i) {  // decode steps
    dsv4::ForwardBatch step;
    step.chunks.push_back({seq.get(), std::span<const int32_t>(&f.decode[i], 1), false});
    rt.model().forward(step, &stats);
  }
  *expected = expected_scored(rt.model_config(), 0, prompt_len + 8);
  return stats.indexer_entries_scored;
}

TEST(IndexerCost, ScoresOnlyVisibleEntriesWhateverMaxContext) {
  int64_t expected_small = 0, expected_large = 0;
  const int64_t small = scored_for(4096, 200, &expected_small);
  const int64_t large = scored_for(1 << 20, 200, &expected_large);
  EXPECT_GT(expected_small, 0);
  EXPECT_EQ(small, expected_small);
  EXPECT_EQ(large, expected_large);
  EXPECT_EQ(small, large);
}

TEST(IndexerCost, GrowsWithRealContext) {
  int64_t e1 = 0, e2 = 0;
  const int64_t short_ctx = scored_for(1 << 20, 100, &e1);
  const int64_t long_ctx = scored_for(1 << 20, 280, &e2);
  EXPECT_EQ(short_ctx, e1);
  EXPECT_EQ(long_ctx, e2);
  EXPECT_GT(long_ctx, short_ctx);
}

}  // namespace
}  // namespace tessera
