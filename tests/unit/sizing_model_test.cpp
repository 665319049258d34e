// The sizing model's arithmetic (bench/sizing_model.hpp): bytes per step of a small config summed
// by hand, the TP/EP split, the expected-experts formula, the collectives, Flash against the
// figures of DSV4.md §5, and a checkpoint's headers against its preset's formats.
#include "bench/sizing_model.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "bench/decode_bench.hpp"
#include "model/checkpoint_presets.hpp"
#include "model/random_checkpoint.hpp"
#include "util/check.hpp"

namespace tessera::bench {
namespace {

dsv4::ModelConfig small_config() {  // one window-only layer, learned routing
  dsv4::ModelConfig c;
  c.vocab_size = 64;
  c.hidden_size = 64;
  c.num_layers = 1;
  c.num_heads = 2;
  c.head_dim = 32;
  c.rope_dim = 8;
  c.q_lora_rank = 32;
  c.o_groups = 2;
  c.o_lora_rank = 16;
  c.window = 16;
  c.compress_ratios = {0};
  c.num_hash_layers = 0;
  c.n_routed_experts = 4;
  c.experts_per_token = 2;
  c.moe_intermediate_size = 32;
  return c;
}

HardwareFigures unit_hardware() {  // 1 GB/s, 1 GFLOP/s, 1 GB/s links, 1 us per collective
  HardwareFigures h = cpu_figures(1.0, 1.0);
  h.link_gbps = 1.0;
  h.collective_latency_us = 1.0;
  return h;
}

TEST(SizingModel, ExpectedDistinctExpertsIsKAtBatchOneAndTendsToE) {
  EXPECT_DOUBLE_EQ(expected_distinct_experts(256, 6, 1), 6.0);
  EXPECT_NEAR(expected_distinct_experts(256, 6, 64), 199.9, 0.05);  // DSV4.md §5
  EXPECT_NEAR(expected_distinct_experts(256, 6, 100000), 256.0, 1e-9);
  EXPECT_LT(expected_distinct_experts(256, 6, 8), 48.0);  // overlaps already at 8
}

TEST(SizingModel, BytesPerStepOfASmallConfigByHand) {
  const auto model = footprint_of_config(small_config(), WeightFormat::F32, "small");
  SizingOptions o;
  o.ranks = 2;
  o.context = 0;  // no cache: weights only
  const StepCost s = decode_step_cost(model, o, unit_hardware(), 1);
  // fp32, D = 64: norm 64, hc_head fn 4x256 + base 4 + scale 1, attn_norm + ffn_norm 2x64,
  // two mHC sites 2 x (24x256 + 24 + 3), wq_a 32x64, q_norm 32, wkv 32x64, kv_norm 32,
  // router 4x64 + bias 4.
  const double replicated = 4.0 * (64 + 4 * 256 + 4 + 1 + 2 * 64 + 2 * (24 * 256 + 24 + 3) +
                                   32 * 64 + 32 + 32 * 64 + 32 + 4 * 64 + 4);
  EXPECT_DOUBLE_EQ(s.replicated_bytes, replicated);
  // Halved over 2 ranks: sinks 2, wq_b 64x32, wo_a 32x32, wo_b 64x32, shared expert 3x32x64.
  EXPECT_DOUBLE_EQ(s.sharded_bytes, 4.0 * (2 + 64 * 32 + 32 * 32 + 64 * 32 + 3 * 32 * 64) / 2);
  EXPECT_DOUBLE_EQ(s.head_bytes, 4.0 * 64 * 64 / 2);
  EXPECT_DOUBLE_EQ(s.rows_bytes, 4.0 * 64);                     // one embedding row
  EXPECT_DOUBLE_EQ(s.expert_bytes, 2 * 4.0 * 3 * 32 * 64 / 2);  // k = 2 experts, halved
  EXPECT_DOUBLE_EQ(s.kv_bytes + s.index_bytes, 0.0);
  EXPECT_DOUBLE_EQ(s.memory_s, s.bytes() / 1e9);
  // Collectives: 2 all-reduces of 64 x 2 B + 1 all-gather of 64 x 4 B logits.
  EXPECT_EQ(s.collectives, 3);
  EXPECT_DOUBLE_EQ(s.all_reduce_bytes, 128.0);
  EXPECT_DOUBLE_EQ(s.all_gather_bytes, 256.0);
  EXPECT_DOUBLE_EQ(s.collective_s, 3e-6 + (2 * 2 * 0.5 * 128 + 0.5 * 256) / 1e9);

  o.ranks = 1;
  const StepCost one = decode_step_cost(model, o, unit_hardware(), 1);
  EXPECT_EQ(one.collectives, 0);
  EXPECT_DOUBLE_EQ(one.collective_s, 0.0);
  EXPECT_DOUBLE_EQ(one.expert_bytes, 2 * 4.0 * 3 * 32 * 64);
}

TEST(SizingModel, ExpertParallelReadsTheSameAverageAsTensorParallel) {
  const auto model = footprint_of_config(small_config(), WeightFormat::Bf16, "small");
  SizingOptions tp;
  tp.ranks = 2;
  SizingOptions ep = tp;
  ep.experts = ExpertSplit::ExpertParallel;
  for (const int64_t b : {1, 3, 16}) {
    EXPECT_DOUBLE_EQ(decode_step_cost(model, tp, unit_hardware(), b).expert_bytes,
                     decode_step_cost(model, ep, unit_hardware(), b).expert_bytes);
  }
  ep.ranks = 3;  // 4 experts do not split over 3 ranks
  EXPECT_THROW((void)decode_step_cost(model, ep, unit_hardware(), 1), Error);
}

TEST(SizingModel, KvBytesFollowTheCompressionRatios) {
  auto c = small_config();
  c.num_layers = 3;
  c.compress_ratios = {0, 4, 128};
  c.index_topk = 8;
  SizingOptions o;
  o.context = 1024;
  // window 16 entries per layer; CSA min(8, 256) entries; HCA 1024/128 = 8 entries.
  EXPECT_DOUBLE_EQ(kv_bytes_per_sequence(c, o), (3 * 16 + 8 + 8) * 584.0);
  EXPECT_DOUBLE_EQ(index_bytes_per_sequence(c, o), 256 * 132.0);
}

TEST(SizingModel, FlashMatchesTheHandComputedFiguresOfDsv4Md) {
  const auto flash =
      footprint_of_config(dsv4::preset_model_config("flash"), WeightFormat::Official, "flash");
  SizingOptions o;
  o.ranks = 1;
  const HardwareFigures h200 = gpu_figures("h200");
  // DSV4.md §5: 11,217 MB per token at batch 1; 122.7 GB per step at batch 64 (TP = 1);
  // 2,538 MB and 16,471 MB per GPU at TP = 8; KV 9.87 MB + indexer 2.84 MB at 4K context.
  EXPECT_NEAR(decode_step_cost(flash, o, h200, 1).weight_bytes() / 1e6, 11217, 11);
  EXPECT_NEAR(decode_step_cost(flash, o, h200, 64).weight_bytes() / 1e9, 122.7, 0.1);
  const StepCost b1 = decode_step_cost(flash, o, h200, 1);
  EXPECT_NEAR(b1.kv_bytes / 1e6, 9.87, 0.01);
  EXPECT_NEAR(b1.index_bytes / 1e6, 2.84, 0.01);
  o.ranks = 8;
  EXPECT_NEAR(decode_step_cost(flash, o, h200, 1).weight_bytes() / 1e6, 2538, 3);
  EXPECT_NEAR(decode_step_cost(flash, o, h200, 64).weight_bytes() / 1e6, 16471, 17);
  EXPECT_EQ(decode_step_cost(flash, o, h200, 1).collectives, 87);  // GPU.md: 2 per layer + 1
  // DSV4.md §4: a sequence stores ~3,850 B per token + the 3.2 MB window: 4K ~ 19 MB, 128K ~
  // 508 MB, 1M ~ 4.04 GB; compressor state 21 x (64 + 16) KiB + 20 x 512 KiB.
  const auto& c = flash.config;
  EXPECT_NEAR(kv_bytes_stored_per_sequence(c, o) / 1e6, 19.0, 0.2);
  o.context = 131072;
  EXPECT_NEAR(kv_bytes_stored_per_sequence(c, o) / 1e6, 508, 3);
  o.context = 1 << 20;
  EXPECT_NEAR(kv_bytes_stored_per_sequence(c, o) / 1e9, 4.04, 0.01);
  EXPECT_DOUBLE_EQ(compressor_state_bytes_per_sequence(c), (21 * 80 + 20 * 512) * 1024.0);
  // Resident per rank at TP = 8: the replicated part whole, the rest (the ~155 GB of experts,
  // attention, head) an eighth.
  double total = 0;
  for (const auto& t : flash.tensors) total += static_cast<double>(t.bytes);
  const double resident = resident_weight_bytes(flash, o);
  EXPECT_GT(resident, total / 8);
  EXPECT_LT(resident, total / 8 + 3e9);
}

TEST(SizingModel, CheckpointHeadersGiveThePresetsOfficialBytes) {
  const auto config = bench_model_config("tiny");
  const auto dir = std::filesystem::temp_directory_path() / ("sizing_" + std::to_string(getpid()));
  const uint64_t written = dsv4::write_random_checkpoint(config, dir, 3);
  const auto from_file = footprint_of_checkpoint(dir);
  const auto from_config = footprint_of_config(config, WeightFormat::Official, "tiny");
  uint64_t a = 0, b = 0;
  for (const auto& t : from_file.tensors) a += t.bytes;
  for (const auto& t : from_config.tensors) b += t.bytes;
  EXPECT_EQ(a, written);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(from_file.fp8_compute);
  SizingOptions o;
  o.ranks = 2;
  const auto hw = unit_hardware();
  EXPECT_DOUBLE_EQ(decode_step_cost(from_file, o, hw, 4).bytes(),
                   decode_step_cost(from_config, o, hw, 4).bytes());
  EXPECT_DOUBLE_EQ(decode_step_cost(from_file, o, hw, 4).flops,
                   decode_step_cost(from_config, o, hw, 4).flops);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera::bench
