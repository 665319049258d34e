// Tensor parallelism on the emulated CUDA device (docs/engine.md "Tensor parallelism"): each rank
// places only its share of the checkpoint (model/device_shard.hpp), runs its DeviceModel on its
// own stream, and the block outputs and vocabulary shards meet through the device collectives.
// - tiny-b (F32; 8 heads, 4 output groups, vocabulary 512, expert width 32): TP 2 and 4 logits
//   within the reduction-order tolerance of TP 1 on the same device, not bit-identical (so the
//   weights were really split), the same greedy tokens;
// - a small checkpoint in the official formats (FP8 weights with 128 x 128 scale blocks, FP4
//   experts; made here by write_random_checkpoint): TP 2 within tolerance of TP 1 (the shares
//   keep whole scale blocks);
// - the shares: a rank's wq_b, wo_b, expert and head tensors are 1/N of the stored ones, in the
//   stored format; a split that would cut a scale block is refused naming the tensor; a share
//   run outside its group is refused; a rank whose share and kv pool do not fit the device's
//   free memory is refused before loading, with the bytes;
// - ranks on emulated devices of their own (one per rank, as on GPUs) give the bits of ranks
//   sharing one device;
// - greedy steps (every chunk scan-only) gather the shards' scans, not their values, and merge
//   them to TP 1's argmax and max;
// - a rank that fails mid-run (fault injected in rank 1 of 2) stops the step with an error naming
//   it on rank 0, every later step throws at once, and nothing hangs (the executor joins);
// - decode graphs at TP 2 (three sequences: bucket 4, one padding row; warm-up, capture and
//   replays on every rank, the collectives eager between the pieces) give the bits of the same
//   steps with graphs off;
// - expert parallelism (moe_split = "ep"): each rank holds E / N whole routed experts and none of
//   the others; EP 2 equals TP 1 and TP 2 within the tolerance, with the same greedy tokens, on
//   tiny-b and on the FP8 / FP4 checkpoint; ranks that do not divide E are refused naming E.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "device/open_device.hpp"
#include "engine_harness.hpp"
#include "executor/executor.hpp"
#include "model/checkpoint_presets.hpp"
#include "model/device_weights.hpp"
#include "model/random_checkpoint.hpp"

namespace tessera {
namespace {

// Summation order differs between TP 1 and TP N (shares summed, then all-reduced): the same
// tolerance as the CPU ranks' (tp_equivalence_test), while a sharding bug moves logits by > 1e-2.
constexpr double kTpTolerance = 1e-4;
// bf16 collectives round every block output to bf16 (2^-9 relative) twice per layer: measured
// on tiny-b at TP 2, max |dlogit| 0.042 against TP 1 (fp32 collectives: 2.9e-6).
constexpr double kBf16CollectiveTolerance = 0.1;

RuntimeOptions device_options(const std::filesystem::path& model_dir, int tp, bool ep = false,
                              bool bf16_collectives = false) {
  RuntimeOptions o = engine_test::runtime_options(0.02, 16, R"({"storage":"fp32"})");
  o.model_dir = model_dir;
  o.device = "cuda";
  o.cuda_module = "emulated";
  o.tensor_parallel = tp;
  o.expert_parallel = ep;
  o.bf16_collectives = bf16_collectives;
  return o;
}

struct StepLogits {
  std::vector<std::vector<float>> logits;  // per step, every chunk's row
  std::vector<int32_t> greedy;             // per step, sequence 1's argmax
};

// Two sequences: prompts in chunks, then decode steps feeding back each argmax.
// rank_devices: receives each rank's device as the executor names it.
StepLogits run_steps(const std::filesystem::path& fixture, int tp, int steps, bool ep = false,
                     bool bf16_collectives = false,
                     std::vector<std::string>* rank_devices = nullptr) {
  Runtime rt(device_options(fixture, tp, ep, bf16_collectives));
  Executor ex(rt, tp, 2);
  if (rank_devices != nullptr) *rank_devices = ex.rank_devices();
  const int64_t vocab = rt.model_config().vocab_size;
  const std::vector<std::vector<int32_t>> prompts{engine_test::make_prompt(1, 24),
                                                  engine_test::make_prompt(2, 9)};
  for (uint64_t s = 0; s < prompts.size(); ++s) ex.apply({CacheOpKind::kCreate, s + 1, 0});
  StepLogits run;
  std::vector<size_t> done(prompts.size(), 0);
  std::vector<int32_t> last(prompts.size(), 0);
  for (int step = 0; step < steps; ++step) {
    const dsv4::Logits logits = ex.step(engine_test::next_chunks(prompts, done, last, 16));
    for (size_t s = 0; s < prompts.size(); ++s) {
      const float* row = logits.row(logits.chunk_rows[s]);
      last[s] = static_cast<int32_t>(std::max_element(row, row + logits.vocab) - row) % vocab;
    }
    run.greedy.push_back(last[0]);
    run.logits.emplace_back(logits.values.begin(), logits.values.end());
  }
  return run;
}

double max_difference(const StepLogits& a, const StepLogits& b) {
  double worst = 0;
  for (size_t s = 0; s < a.logits.size(); ++s) {
    EXPECT_EQ(a.logits[s].size(), b.logits[s].size());
    for (size_t i = 0; i < std::min(a.logits[s].size(), b.logits[s].size()); ++i)
      worst = std::max(worst, std::abs(double(a.logits[s][i]) - b.logits[s][i]));
  }
  return worst;
}

// A checkpoint in the official formats small enough for the emulator whose FP8 and FP4 tensors
// split in two with whole scale blocks: hidden 256, 4 heads x 64, 2 output groups x 128, expert
// and shared-expert width 256, 4 routed experts, vocabulary 512, 2 layers (window, CSA).
std::filesystem::path quantised_checkpoint() {
  // One directory per process (ctest runs this file's tests as separate processes, in parallel),
  // removed when the process ends.
  struct Scratch {
    std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                ("tessera-device-tp-fp8-" + std::to_string(::getpid()));
    ~Scratch() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  };
  static const Scratch scratch;
  const std::filesystem::path& dir = scratch.dir;
  dsv4::ModelConfig c = dsv4::preset_model_config("flash", {2, 4, 512});
  c.hidden_size = 256;
  c.num_heads = 4;
  c.head_dim = 64;
  c.rope_dim = 32;
  c.q_lora_rank = 128;
  c.o_groups = 2;
  c.o_lora_rank = 128;
  c.moe_intermediate_size = 256;
  c.index_n_heads = 4;
  c.index_head_dim = 64;
  c.index_topk = 8;
  c.window = 16;
  if (!std::filesystem::exists(dir / "model.safetensors")) dsv4::write_random_checkpoint(c, dir, 5);
  return dir;
}

TEST(DeviceTensorParallel, TinyBAtTwoAndFourRanksMatchesOneRank) {
  const auto tiny_b = engine_test::fixture_dir("tiny-b");
  const StepLogits one = run_steps(tiny_b, 1, 3);
  for (int tp : {2, 4}) {
    const StepLogits many = run_steps(tiny_b, tp, 3);
    const double worst = max_difference(one, many);
    EXPECT_LE(worst, kTpTolerance) << "tp " << tp;
    EXPECT_GT(worst, 0.0) << "tp " << tp << ": bit-identical is unexpected (is it split?)";
    EXPECT_EQ(many.greedy, one.greedy) << "tp " << tp;
    std::printf("device TP=%d vs TP=1 (tiny-b, emulated): max |dlogit| = %.3g\n", tp, worst);
  }
}

// Three sequences' prompts in one step, then `decode` steps of all three (bucket 4: one padding
// row), at `tp` ranks with CUDA graphs on or off. Every step's logits; rank 0's graph stats.
StepLogits run_decode(const std::filesystem::path& fixture, int tp, int decode, bool graphs,
                      dsv4::PiecewiseGraphs::Stats* stats, const char* attention = nullptr) {
  RuntimeOptions o = device_options(fixture, tp);
  o.cuda_graphs = graphs;
  if (attention != nullptr) {  // with the bf16 cache's bf16 storage, which mma reads
    o.attention_plugin = attention;
    o.kv_options_json = "{}";
  }
  Runtime rt(o);
  Executor ex(rt, tp, 2);
  const std::vector<std::vector<int32_t>> prompts{engine_test::make_prompt(1, 5),
                                                  engine_test::make_prompt(2, 3),
                                                  engine_test::make_prompt(3, 4)};
  for (uint64_t s = 0; s < prompts.size(); ++s) ex.apply({CacheOpKind::kCreate, s + 1, 0});
  StepLogits run;
  std::vector<size_t> done(prompts.size(), 0);
  std::vector<int32_t> last(prompts.size(), 0);
  for (int step = 0; step <= decode; ++step) {
    const dsv4::Logits logits = ex.step(engine_test::next_chunks(prompts, done, last, 16));
    for (size_t s = 0; s < prompts.size(); ++s) {
      const float* row = logits.row(logits.chunk_rows[s]);
      last[s] = static_cast<int32_t>(std::max_element(row, row + logits.vocab) - row);
    }
    run.greedy.push_back(last[0]);
    run.logits.emplace_back(logits.values.begin(), logits.values.end());
  }
  *stats = rt.device_model()->graphs().stats();
  return run;
}

TEST(DeviceTensorParallel, DecodeGraphsAtTwoRanksReplayTheEagerBits) {
  const auto tiny_b = engine_test::fixture_dir("tiny-b");
  dsv4::PiecewiseGraphs::Stats graphed_stats, eager_stats;
  const StepLogits graphed = run_decode(tiny_b, 2, 4, true, &graphed_stats);
  const StepLogits eager = run_decode(tiny_b, 2, 4, false, &eager_stats);
  EXPECT_EQ(max_difference(graphed, eager), 0.0);
  EXPECT_EQ(graphed.greedy, eager.greedy);
  // Rank 0: the prompts and the warm-up eagerly, one capture, two replays, three pieces per
  // layer and a last one (the collectives between them).
  EXPECT_EQ(graphed_stats.eager_steps, 2);
  EXPECT_EQ(graphed_stats.captured_steps, 1);
  EXPECT_EQ(graphed_stats.replayed_steps, 2);
  const int64_t L = dsv4::load_model_config(tiny_b).num_layers;
  EXPECT_EQ(graphed_stats.pieces_replayed, 2 * (3 * L + 1));
  EXPECT_EQ(graphed_stats.padding_rows, 4);
  EXPECT_EQ(eager_stats.captured_steps + eager_stats.replayed_steps, 0);
}

// The mma plugin inside the graphs (ABI 1.7 shaped run) on every rank: the shipped model
// (head_dim 64, every ratio) at TP 2, two heads per rank. Two pieces per layer and a last one
// (the attention joins the layer's input piece), and the replays give the bits of eager steps.
TEST(DeviceTensorParallel, MmaAttentionInsideTheDecodeGraphsAtTwoRanks) {
  const std::filesystem::path shipped =
      std::filesystem::path(TESSERA_SOURCE_DIR) / "models/tiny-dsv4";
  dsv4::PiecewiseGraphs::Stats graphed_stats, eager_stats;
  const StepLogits graphed = run_decode(shipped, 2, 4, true, &graphed_stats, "mma");
  const StepLogits eager = run_decode(shipped, 2, 4, false, &eager_stats, "mma");
  EXPECT_EQ(max_difference(graphed, eager), 0.0);
  EXPECT_EQ(graphed.greedy, eager.greedy);
  EXPECT_EQ(graphed_stats.captured_steps, 1);
  EXPECT_EQ(graphed_stats.replayed_steps, 2);
  const int64_t L = dsv4::load_model_config(shipped).num_layers;
  EXPECT_EQ(graphed_stats.pieces_replayed, 2 * (2 * L + 1));
}

// Greedy rows under tensor parallelism (every chunk scan-only): the ranks gather their vocabulary
// shards' scans instead of their values and rank 0 merges them; the logits come back without
// values and the scans give TP 1's greedy tokens and maxima (within the reduction tolerance).
TEST(DeviceTensorParallel, ScanOnlyStepsGatherTheShardsScansNotTheirValues) {
  const auto tiny_b = engine_test::fixture_dir("tiny-b");
  const StepLogits one = run_steps(tiny_b, 1, 3);
  for (int tp : {2, 4}) {
    Runtime rt(device_options(tiny_b, tp));
    Executor ex(rt, tp, 2);
    const std::vector<std::vector<int32_t>> prompts{engine_test::make_prompt(1, 24),
                                                    engine_test::make_prompt(2, 9)};
    for (uint64_t s = 0; s < prompts.size(); ++s) ex.apply({CacheOpKind::kCreate, s + 1, 0});
    std::vector<size_t> done(prompts.size(), 0);
    std::vector<int32_t> last(prompts.size(), 0);
    for (size_t step = 0; step < one.greedy.size(); ++step) {
      std::vector<PlannedChunk> chunks = engine_test::next_chunks(prompts, done, last, 16);
      for (PlannedChunk& c : chunks) c.scan_only = true;
      const dsv4::Logits logits = ex.step(chunks);
      EXPECT_TRUE(logits.values.empty()) << "tp " << tp;
      EXPECT_TRUE(logits.group_max.empty()) << "tp " << tp;
      ASSERT_EQ(logits.scans.size(), prompts.size()) << "tp " << tp;
      for (size_t s = 0; s < prompts.size(); ++s) {
        const ops::RowScan& scan = logits.scans[s];
        ASSERT_TRUE(scan.finite);
        EXPECT_EQ(logits.row(logits.chunk_rows[s]), nullptr);
        const std::vector<float>& values = one.logits[step];  // TP 1: [chunks, vocab]
        const auto row = values.begin() + static_cast<long>(s) * logits.vocab;
        const auto top = std::max_element(row, row + logits.vocab);
        EXPECT_EQ(scan.argmax, top - row) << "tp " << tp << " step " << step << " seq " << s;
        EXPECT_NEAR(scan.max, *top, kTpTolerance) << "tp " << tp << " step " << step;
        last[s] = scan.argmax;
      }
      EXPECT_EQ(last[0], one.greedy[step]) << "tp " << tp << " step " << step;
    }
  }
}

// A device per rank, as on GPUs: with TESSERA_EMULATED_DEVICES=4 the emulated module reports four
// devices and rank r places its share, pages and stream on cuda:r. The arithmetic is the same as
// with the ranks sharing one device, so the logits are the same bits (and those match TP 1: the
// test above).
TEST(DeviceTensorParallel, RanksOnDevicesOfTheirOwnMatchRanksSharingOne) {
  const auto tiny_b = engine_test::fixture_dir("tiny-b");
  std::vector<std::string> devices;
  const StepLogits shared = run_steps(tiny_b, 2, 3, false, false, &devices);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0], devices[1]);  // one emulated device: the ranks share it
  ::setenv("TESSERA_EMULATED_DEVICES", "4", 1);
  const StepLogits own = run_steps(tiny_b, 2, 3, false, false, &devices);
  ::unsetenv("TESSERA_EMULATED_DEVICES");
  ASSERT_EQ(devices.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(devices[static_cast<size_t>(r)].rfind("cuda:" + std::to_string(r) + " ", 0), 0u)
        << devices[static_cast<size_t>(r)];
  }
  EXPECT_EQ(max_difference(shared, own), 0.0);
  EXPECT_EQ(own.greedy, shared.greedy);
}

TEST(DeviceTensorParallel, Fp8AndFp4SharesAtTwoRanksMatchOneRank) {
  const auto dir = quantised_checkpoint();
  const StepLogits one = run_steps(dir, 1, 3);
  const StepLogits two = run_steps(dir, 2, 3);
  const double worst = max_difference(one, two);
  std::printf("device TP=2 vs TP=1 (FP8 / FP4 checkpoint, emulated): max |dlogit| = %.3g\n", worst);
  EXPECT_GT(worst, 0.0) << "bit-identical is unexpected (is it split?)";
  EXPECT_LE(worst, 1e-3);  // W8A8: the shares quantise the same activations; fp32 sums
  EXPECT_EQ(two.greedy, one.greedy);
}

TEST(DeviceTensorParallel, SharesAreCutInTheStoredFormat) {
  const auto dev = device::open_device({"cuda", 0, "emulated"});
  const device::Stream s = dev->create_stream();
  const RuntimeOptions o = device_options(quantised_checkpoint(), 1);
  const dsv4::ModelConfig config = dsv4::load_model_config(o.model_dir);
  const dsv4::DeviceModelWeights whole = dsv4::upload_model_weights(*dev, s, o.model_dir, config);
  const dsv4::DeviceModelWeights half =
      dsv4::upload_model_weights(*dev, s, o.model_dir, config, {1, 2});
  EXPECT_LT(half.bytes, whole.bytes);
  for (const auto& [name, t] : whole.tensors) {
    const dsv4::DeviceTensor& h = half.tensors.at(name);
    const dsv4::SplitAxis axis = dsv4::split_axis(name);
    EXPECT_EQ(h.dtype, t.dtype) << name;
    std::vector<int64_t> want = t.shape;
    if (axis == dsv4::SplitAxis::kRows) want[0] /= 2;
    if (axis == dsv4::SplitAxis::kColumns) want[1] /= 2;
    EXPECT_EQ(h.shape, want) << name;
    EXPECT_EQ(h.data.bytes() * (axis == dsv4::SplitAxis::kWhole ? 1 : 2), t.data.bytes()) << name;
  }
  EXPECT_EQ(dsv4::split_axis("layers.3.attn.wq_b.weight"), dsv4::SplitAxis::kRows);
  EXPECT_EQ(dsv4::split_axis("layers.3.attn.indexer.wq_b.weight"), dsv4::SplitAxis::kWhole);
  EXPECT_EQ(dsv4::split_axis("layers.0.ffn.experts.17.w2.weight"), dsv4::SplitAxis::kColumns);
  EXPECT_EQ(dsv4::split_axis("layers.0.ffn.gate.weight"), dsv4::SplitAxis::kWhole);
  // tiny-fp8's FP8 shared expert is 128 wide: 2 shares of 64 rows would cut its 128-row scale
  // blocks (the activations' 1 x 128 blocks too).
  try {
    const auto fp8 = engine_test::fixture_dir("tiny-fp8");
    (void)dsv4::upload_model_weights(*dev, s, fp8, dsv4::load_model_config(fp8), {0, 2});
    ADD_FAILURE() << "a share cutting FP8 scale blocks was placed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scale"), std::string::npos) << e.what();
  }
}

TEST(DeviceTensorParallel, AShareAloneIsRefused) {
  Runtime rt(device_options(engine_test::fixture_dir("tiny-b"), 2));  // rank 0's share alone
  auto seq = rt.new_sequence();
  const std::vector<int32_t> tokens{1, 2, 3};
  dsv4::ForwardBatch b;
  b.chunks.push_back({seq.get(), tokens, false});
  try {
    (void)rt.model().forward(b);
    ADD_FAILURE() << "a 1/2 share ran alone";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("share"), std::string::npos) << e.what();
  }
}

// A share that does not fit with its kv pool is refused before anything is placed, with the
// bytes needed and free (the emulator's free memory is the host's).
TEST(DeviceTensorParallel, ARankThatDoesNotFitIsRefusedBeforeLoading) {
  RuntimeOptions o = device_options(engine_test::fixture_dir("tiny-b"), 2);
  o.memory_gib = 60000;
  try {
    Runtime rt(o);
    ADD_FAILURE() << "a 60000 GiB kv pool was accepted";
  } catch (const Error& e) {
    const std::string why = e.what();
    for (const char* part : {"rank 0 of 2", "memory_gib", "GiB free", "60000.00 GiB of kv pool"})
      EXPECT_NE(why.find(part), std::string::npos) << part << " not in: " << why;
  }
}

TEST(DeviceExpertParallel, TwoRanksOfWholeExpertsMatchOneRankAndTensorParallel) {
  const auto tiny_b = engine_test::fixture_dir("tiny-b");  // 6 routed experts: 3 per rank
  const StepLogits one = run_steps(tiny_b, 1, 3);
  const StepLogits tp = run_steps(tiny_b, 2, 3);
  const StepLogits ep = run_steps(tiny_b, 2, 3, true);
  const double vs_one = max_difference(one, ep), vs_tp = max_difference(tp, ep);
  std::printf("device EP=2 vs TP=1 / TP=2 (tiny-b, emulated): max |dlogit| = %.3g / %.3g\n", vs_one,
              vs_tp);
  EXPECT_LE(vs_one, kTpTolerance);
  EXPECT_LE(vs_tp, kTpTolerance);
  EXPECT_GT(vs_tp, 0.0) << "EP bit-identical to TP: are the experts really whole per rank?";
  EXPECT_EQ(ep.greedy, one.greedy);

  const auto dir = quantised_checkpoint();  // 4 FP4 experts: 2 per rank
  const StepLogits q_one = run_steps(dir, 1, 3), q_ep = run_steps(dir, 2, 3, true);
  const double q = max_difference(q_one, q_ep);
  std::printf("device EP=2 vs TP=1 (FP8 / FP4 checkpoint, emulated): max |dlogit| = %.3g\n", q);
  EXPECT_LE(q, 1e-3);
  EXPECT_EQ(q_ep.greedy, q_one.greedy);
}

// collective_dtype = "bf16": the two all-reduces per layer exchange bf16 values (each rank's
// part and the sum rounded, 2^-9 relative each), the logits' all-gather stays fp32. One rank has
// no collective and gives TP 1's bits; two ranks stay near TP 1 with the same greedy tokens,
// and further from it than fp32 collectives (the bf16 path is really taken).
TEST(DeviceTensorParallel, Bf16CollectivesStayNearFp32Ones) {
  const auto tiny_b = engine_test::fixture_dir("tiny-b");
  const StepLogits one = run_steps(tiny_b, 1, 3);
  EXPECT_EQ(max_difference(one, run_steps(tiny_b, 1, 3, false, true)), 0.0);
  const StepLogits fp32 = run_steps(tiny_b, 2, 3), bf16 = run_steps(tiny_b, 2, 3, false, true);
  const double d_fp32 = max_difference(one, fp32), d_bf16 = max_difference(one, bf16);
  std::printf(
      "device TP=2 vs TP=1 (tiny-b, emulated): fp32 collectives max |dlogit| %.3g, bf16 "
      "collectives %.3g\n",
      d_fp32, d_bf16);
  EXPECT_LE(d_bf16, kBf16CollectiveTolerance);
  EXPECT_GT(d_bf16, 10 * d_fp32);
  EXPECT_EQ(bf16.greedy, one.greedy);
}

TEST(DeviceExpertParallel, ARankHoldsItsWholeExpertsOnly) {
  const auto dev = device::open_device({"cuda", 0, "emulated"});
  const device::Stream s = dev->create_stream();
  const auto dir = quantised_checkpoint();
  const dsv4::ModelConfig config = dsv4::load_model_config(dir);
  const dsv4::DeviceModelWeights whole = dsv4::upload_model_weights(*dev, s, dir, config);
  const dsv4::DeviceModelWeights rank1 =
      dsv4::upload_model_weights(*dev, s, dir, config, {1, 2, true});
  int held = 0;
  for (const auto& [name, t] : whole.tensors) {
    const int64_t e = dsv4::routed_expert_of(name);
    const dsv4::DeviceTensor* mine = rank1.find(name);
    if (e >= 0) {
      EXPECT_EQ(mine != nullptr, e >= 2) << name;  // experts 2 and 3 of 4
      if (mine != nullptr) {
        EXPECT_EQ(mine->shape, t.shape) << name << ": an expert is whole under EP";
        EXPECT_EQ(mine->data.bytes(), t.data.bytes()) << name;
        ++held;
      }
    } else if (name.find("shared_experts.w1") != std::string::npos) {
      ASSERT_NE(mine, nullptr) << name;
      EXPECT_EQ(mine->shape[0] * 2, t.shape[0]) << name << ": the shared expert stays cut";
    }
  }
  EXPECT_GT(held, 0);
  EXPECT_EQ(dsv4::routed_expert_of("layers.2.ffn.experts.17.w3.weight"), 17);
  EXPECT_EQ(dsv4::routed_expert_of("layers.2.ffn.shared_experts.w3.weight"), -1);
  EXPECT_EQ(dsv4::local_experts({1, 2, true}, 6).first, 3);
  EXPECT_EQ(dsv4::local_experts({1, 2, false}, 6).count, 6);
  try {
    (void)run_steps(engine_test::fixture_dir("tiny-b"), 4, 1, true);
    ADD_FAILURE() << "4 ranks split 6 experts";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not divide the 6 routed experts"), std::string::npos)
        << e.what();
  }
}

TEST(DeviceTensorParallel, AFailingRankStopsTheStepOnEveryRankWithoutHanging) {
  Runtime rt(device_options(engine_test::fixture_dir("tiny-b"), 2));
  Executor ex(rt, 2, 2);
  const std::vector<std::vector<int32_t>> prompts{engine_test::make_prompt(1, 12)};
  ex.apply({CacheOpKind::kCreate, 1, 0});
  std::vector<size_t> done(1, 0);
  std::vector<int32_t> last(1, 0);
  (void)ex.step(engine_test::next_chunks(prompts, done, last, 8));  // both ranks run
  EXPECT_FALSE(ex.failed());
  ex.fail_rank_at_next_step(1, "rank 1 ran out of device memory (injected)");
  try {
    (void)ex.step(engine_test::next_chunks(prompts, done, last, 8));
    ADD_FAILURE() << "rank 0 finished a step its partner never ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(ex.failed());
  EXPECT_THROW((void)ex.step(engine_test::next_chunks(prompts, done, last, 8)), Error);
}

}  // namespace
}  // namespace tessera
