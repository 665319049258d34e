// Piecewise CUDA graphs in the device forward (model/piecewise_graphs.hpp) on the emulated
// device (tiny-b: five layers, every compress ratio): decode steps of a batch-size bucket run
// eagerly once, are captured the next time and replayed after, and every step's logits are the
// bits of the same steps with graphs off (3 sequences run in the bucket of 4: one padding row);
// steps of 3 and 4 sequences share the bucket's graphs; a step that grows the scratch (a longer
// prompt) drops the graphs, which are made again; steps beyond cuda_graph_max_batch, prefill
// steps, and the cpu device (no graphs) run eagerly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "device_engine.hpp"
#include "parity_fixture.hpp"

namespace tessera {
namespace {

// Three sequences: prompts in one step, three decode steps, a fourth sequence's 7-token prompt
// alone (it grows the scratch), three more decode steps of the first three. Every step's logits.
std::vector<std::vector<float>> run(DeviceEngine& e) {
  std::vector<std::unique_ptr<SequenceKv>> kv;
  for (int s = 0; s < 4; ++s) kv.push_back(e.new_sequence());
  std::vector<std::vector<int32_t>> prompts{synthetic_prompt(2, 3, 31), synthetic_prompt(2, 7, 31),
                                            synthetic_prompt(1, 11, 31)};
  std::vector<std::vector<float>> out;
  std::vector<int32_t> last(3);
  const auto keep = [&](const dsv4::Logits& logits) {
    out.emplace_back(logits.values.begin(), logits.values.end());
    for (size_t s = 0; s < 3 && static_cast<int64_t>(s) < logits.rows(); ++s) {
      const float* row = logits.row(logits.chunk_rows[s]);
      last[s] = static_cast<int32_t>(std::max_element(row, row + logits.vocab) - row);
    }
  };
  dsv4::ForwardBatch prefill;
  for (size_t s = 0; s < 3; ++s) prefill.chunks.push_back({kv[s].get(), std::span(prompts[s])});
  keep(e.model->forward(prefill));
  const auto decode = [&] {
    dsv4::ForwardBatch batch;
    for (size_t s = 0; s < 3; ++s) batch.chunks.push_back({kv[s].get(), std::span(&last[s], 1)});
    keep(e.model->forward(batch));
  };
  for (int i = 0; i < 3; ++i) decode();
  const std::vector<int32_t> long_prompt =
      synthetic_prompt(7, 5, 31);  // more rows than any step before
  dsv4::ForwardBatch alone;
  alone.chunks.push_back({kv[3].get(), std::span(long_prompt)});
  const dsv4::Logits alone_logits = e.model->forward(alone);
  out.emplace_back(alone_logits.values.begin(), alone_logits.values.end());
  for (int i = 0; i < 3; ++i) decode();
  return out;
}

TEST(DeviceModelGraphs, DecodeStepsReplayTheEagerBits) {
  const auto options = testing::parity_options(
      std::filesystem::path(TESSERA_SOURCE_DIR) / "tests/data/parity/tiny-b", "{}");
  DeviceEngine e("emulated", options);
  ASSERT_TRUE(e.model->graphs().enabled());  // on by default where the device has graphs
  const std::vector<std::vector<float>> graphed = run(e);
  const dsv4::PiecewiseGraphs::Stats stats = e.model->graphs().stats();
  e.model->set_cuda_graphs(false);
  const std::vector<std::vector<float>> eager = run(e);
  ASSERT_EQ(graphed.size(), eager.size());
  for (size_t step = 0; step < eager.size(); ++step) {
    ASSERT_EQ(graphed[step].size(), eager[step].size()) << "step " << step;
    EXPECT_EQ(
        std::memcmp(graphed[step].data(), eager[step].data(), eager[step].size() * sizeof(float)),
        0)
        << "step " << step;
  }
  // Decode of 3 rows: eager (sizes the scratch), captured, replayed; the long prompt grows the
  // scratch, so the same again. The prompts run eagerly.
  EXPECT_EQ(stats.captured_steps, 2);
  EXPECT_EQ(stats.replayed_steps, 2);
  const int64_t L = e.config.num_layers;
  EXPECT_EQ(stats.pieces_captured, 2 * (L + 1));  // one piece per layer and the last one
  EXPECT_EQ(stats.pieces_replayed, 2 * (L + 1));
  EXPECT_EQ(stats.eager_steps, 2 + 2);            // two prompt steps, two warm-ups
  EXPECT_EQ(stats.padding_rows, 6);               // six decode steps of 3 rows in the bucket of 4
  EXPECT_EQ(e.model->graphs().sizes_kept(), 0u);  // off drops them
}

// Four sequences' prompts in one step, then decode steps of the sequences `steps` lists (each
// step: how many of the first sequences decode). Every step's logits.
std::vector<std::vector<float>> run_steps(DeviceEngine& e, const std::vector<size_t>& steps) {
  std::vector<std::unique_ptr<SequenceKv>> kv;
  std::vector<std::vector<int32_t>> prompts;
  dsv4::ForwardBatch prefill;
  for (int32_t s = 0; s < 4; ++s) {
    kv.push_back(e.new_sequence());
    prompts.push_back(synthetic_prompt(2 + s, 3 + s, 29));
  }
  for (size_t s = 0; s < 4; ++s) prefill.chunks.push_back({kv[s].get(), std::span(prompts[s])});
  std::vector<std::vector<float>> out;
  std::vector<int32_t> last(4);
  const auto keep = [&](const dsv4::Logits& logits) {
    out.emplace_back(logits.values.begin(), logits.values.end());
    for (size_t s = 0; static_cast<int64_t>(s) < logits.rows(); ++s) {
      const float* row = logits.row(logits.chunk_rows[s]);
      last[s] = static_cast<int32_t>(std::max_element(row, row + logits.vocab) - row);
    }
  };
  keep(e.model->forward(prefill));
  for (const size_t n : steps) {
    dsv4::ForwardBatch batch;
    for (size_t s = 0; s < n; ++s) batch.chunks.push_back({kv[s].get(), std::span(&last[s], 1)});
    keep(e.model->forward(batch));
  }
  return out;
}

void expect_same_bits(const std::vector<std::vector<float>>& a,
                      const std::vector<std::vector<float>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t step = 0; step < b.size(); ++step) {
    ASSERT_EQ(a[step].size(), b[step].size()) << "step " << step;
    EXPECT_EQ(std::memcmp(a[step].data(), b[step].data(), b[step].size() * sizeof(float)), 0)
        << "step " << step;
  }
}

TEST(DeviceModelGraphs, StepsOfOneBucketShareItsGraphs) {
  const auto options = testing::parity_options(
      std::filesystem::path(TESSERA_SOURCE_DIR) / "tests/data/parity/tiny-b", "{}");
  DeviceEngine e("emulated", options);
  // Bucket 4: warm-up (4 rows), capture (3: the graphs must hold the padding row), replays (4
  // and 3); bucket 2: its warm-up.
  const std::vector<size_t> steps{4, 3, 4, 3, 2};
  const std::vector<std::vector<float>> graphed = run_steps(e, steps);
  const dsv4::PiecewiseGraphs::Stats stats = e.model->graphs().stats();
  EXPECT_EQ(stats.captured_steps, 1);
  EXPECT_EQ(stats.replayed_steps, 2);
  EXPECT_EQ(stats.eager_steps, 1 + 2);  // the prompts, the warm-ups of buckets 4 and 2
  EXPECT_EQ(stats.padding_rows, 0 + 1 + 0 + 1 + 0);
  EXPECT_EQ(e.model->graphs().sizes_kept(), 1u);

  // Beyond the largest bucket: eagerly, never captured.
  e.model->set_cuda_graphs(true, 2);
  const std::vector<std::vector<float>> capped = run_steps(e, {3, 3, 3});
  EXPECT_EQ(e.model->graphs().stats().captured_steps, stats.captured_steps);
  EXPECT_EQ(e.model->graphs().stats().replayed_steps, stats.replayed_steps);
  EXPECT_EQ(e.model->graphs().sizes_kept(), 0u);

  e.model->set_cuda_graphs(false);
  expect_same_bits(graphed, run_steps(e, steps));
  expect_same_bits(capped, run_steps(e, {3, 3, 3}));
}

// The mma plugin declares "cuda_graph": true and has the shaped run (ABI 1.7): its work joins the
// pieces, so a decode step at one rank is one piece (tiny-fp8: head_dim 128, ratios 0, 4 and
// 128). Each replay runs the step's own work description, written before it without running
// the plugin's launch code, and gives the bits of the same steps run eagerly.
TEST(DeviceModelGraphs, MmaAttentionRunsInsideTheGraphs) {
  RuntimeOptions options = testing::parity_options(
      std::filesystem::path(TESSERA_SOURCE_DIR) / "tests/data/parity/tiny-fp8", "{}");
  options.attention_plugin = "mma";
  DeviceEngine e("emulated", options);
  // Bucket 4: warm-up, capture (3 rows and a padding one), three replays at new positions.
  const std::vector<size_t> steps{4, 3, 4, 3, 4};
  const std::vector<std::vector<float>> graphed = run_steps(e, steps);
  const dsv4::PiecewiseGraphs::Stats stats = e.model->graphs().stats();
  EXPECT_EQ(stats.captured_steps, 1);
  EXPECT_EQ(stats.replayed_steps, 3);
  EXPECT_EQ(stats.pieces_captured, 1);  // the whole forward before the head
  EXPECT_EQ(stats.pieces_replayed, 3);
  e.model->set_cuda_graphs(false);
  expect_same_bits(graphed, run_steps(e, steps));
}

TEST(PiecewiseGraphsBuckets, OneTwoFourThenMultiplesOfEightUpToTheLargest) {
  std::unique_ptr<device::Device> cpu = open_backend("cpu");
  const device::Stream stream = cpu->create_stream();
  const device::Scratch scratch(*cpu, stream);
  dsv4::PiecewiseGraphs graphs(*cpu, stream, scratch);
  const std::vector<std::pair<int64_t, int64_t>> expected{{1, 1},     {2, 2},     {3, 4},  {4, 4},
                                                          {5, 8},     {8, 8},     {9, 16}, {17, 24},
                                                          {250, 256}, {256, 256}, {257, 0}};
  for (const auto& [T, B] : expected) EXPECT_EQ(graphs.bucket(T), B) << "T = " << T;
  graphs.set_max_batch(20);
  EXPECT_EQ(graphs.bucket(16), 16);
  EXPECT_EQ(graphs.bucket(17), 20);
  EXPECT_EQ(graphs.bucket(20), 20);
  EXPECT_EQ(graphs.bucket(21), 0);
  EXPECT_THROW(graphs.set_max_batch(0), Error);
}

TEST(DeviceModelGraphs, TheCpuBackendRunsEagerly) {
  const auto options = testing::parity_options(
      std::filesystem::path(TESSERA_SOURCE_DIR) / "tests/data/parity/tiny-b", "{}");
  DeviceEngine e("cpu", options);
  EXPECT_FALSE(e.model->graphs().enabled());
  (void)run(e);
  EXPECT_EQ(e.model->graphs().stats().captured_steps, 0);
  EXPECT_EQ(e.model->graphs().stats().replayed_steps, 0);
}

}  // namespace
}  // namespace tessera
