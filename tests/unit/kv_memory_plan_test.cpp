// The memory planner (core/src/kv/memory_planner.cpp) sizes the page pools from the layout the
// kv-cache plugin declares. With the same budget and DeepSeek-V4-Flash's shapes, the fp8 cache
// (584 B main entries, 132 B indexer keys) must hold >= 1.7x the tokens of the bf16 cache
// (1024 B, 256 B): DSV4.md §4 puts the steady-state ratio at 6880 / 3850 = 1.79.
#include <gtest/gtest.h>

#include <cstdio>

#include "kv/memory_planner.hpp"
#include "kv_plugin_harness.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera {
namespace {

// DeepSeek-V4-Flash (DSV4.md §1): 43 layers = 2 window-only, then CSA (ratio 4) on even and HCA
// (ratio 128) on odd layers, layer 42 CSA; 512-d latent with 64 rope channels, 128-d indexer.
dsv4::ModelConfig flash_config() {
  dsv4::ModelConfig c;
  c.vocab_size = 129280;
  c.hidden_size = 4096;
  c.num_layers = 43;
  c.num_heads = 64;
  c.head_dim = 512;
  c.rope_dim = 64;
  c.q_lora_rank = 1024;
  c.o_groups = 8;
  c.o_lora_rank = 1024;
  c.window = 128;
  c.compress_ratios = {0, 0};
  for (int i = 0; i < 20; ++i) {
    c.compress_ratios.push_back(4);
    c.compress_ratios.push_back(128);
  }
  c.compress_ratios.push_back(4);
  c.max_position_embeddings = 1 << 20;
  c.index_n_heads = 64;
  c.index_head_dim = 128;
  c.index_topk = 512;
  return c;
}

struct Planned {
  ts_kv_layout main, indexer;
  KvPlan plan;
};

Planned plan_for(const std::string& plugin_name, uint64_t budget, int64_t max_context) {
  const dsv4::ModelConfig config = flash_config();
  const kv_test::KvPlugin plugin(plugin_name);
  Planned p;
  p.main = plugin.layout(TS_KV_MAIN, 512, 64, 64);
  p.indexer = plugin.layout(TS_KV_INDEXER, 128, 128, 64);
  p.plan = plan_kv_memory(config, p.main, p.indexer, budget, max_context);
  return p;
}

TEST(KvMemoryPlan, FlashConfigHasTheDocumentedLayerKinds) {
  const dsv4::ModelConfig c = flash_config();
  ASSERT_EQ(c.compress_ratios.size(), 43u);
  int csa = 0, hca = 0;
  for (const int64_t r : c.compress_ratios) {
    csa += r == 4;
    hca += r == 128;
  }
  EXPECT_EQ(csa, 21);
  EXPECT_EQ(hca, 20);
}

TEST(KvMemoryPlan, Fp8HoldsAtLeast1Point7TimesTheTokensOfBf16) {
  for (const double gib : {8.0, 64.0}) {
    for (const int64_t max_context : {int64_t{131072}, int64_t{1} << 20}) {
      const auto budget = static_cast<uint64_t>(gib * (1ull << 30));
      const Planned bf16 = plan_for("bf16", budget, max_context);
      const Planned fp8 = plan_for("fp8", budget, max_context);
      ASSERT_EQ(bf16.main.bytes_per_entry, 1024u);
      ASSERT_EQ(fp8.main.bytes_per_entry, 584u);
      ASSERT_EQ(fp8.indexer.bytes_per_entry, 132u);
      EXPECT_LE(bf16.plan.bytes, budget);
      EXPECT_LE(fp8.plan.bytes, budget);

      const double token_ratio =
          static_cast<double>(fp8.plan.token_capacity) / bf16.plan.token_capacity;
      // Entries the pools really hold, from the pages the planner allocated.
      const double main_ratio = static_cast<double>(fp8.plan.main_pages * 64) /
                                static_cast<double>(bf16.plan.main_pages * 64);
      const double index_ratio = static_cast<double>(fp8.plan.indexer_pages * 64) /
                                 static_cast<double>(bf16.plan.indexer_pages * 64);
      std::printf(
          "%4.0f GiB, max_context %7lld: bf16 %lld tokens (%.0f B/token), fp8 %lld tokens "
          "(%.0f B/token): x%.3f; main entries x%.3f, indexer entries x%.3f\n",
          gib, static_cast<long long>(max_context),
          static_cast<long long>(bf16.plan.token_capacity), bf16.plan.bytes_per_token,
          static_cast<long long>(fp8.plan.token_capacity), fp8.plan.bytes_per_token, token_ratio,
          main_ratio, index_ratio);
      EXPECT_GE(token_ratio, 1.7);
      EXPECT_GE(main_ratio, 1.7);
      EXPECT_GE(index_ratio, 1.7);
      // DSV4.md §4: 21 x (584 + 132) / 4 + 20 x 584 / 128 = 3850.25 B per context token.
      EXPECT_NEAR(fp8.plan.bytes_per_token, 3850.25, 1e-6);
      EXPECT_NEAR(bf16.plan.bytes_per_token, 6880.0, 1e-6);
    }
  }
}

}  // namespace
}  // namespace tessera
