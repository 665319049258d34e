// Rows wanted for their scans only (dsv4::SequenceChunk::scan_only: a greedy sampler's rows, or
// rows not sampled) on the emulated device: they come back with their scans and group maxima but
// without their values (Logits::row gives null); the rows that want values come back gathered
// into one copy, bit for bit those of a step where every row wants them, and every scan is the
// same. The engine asks for scan-only rows when its sampler declares "greedy_from_scan" (ABI 1.5)
// and gives a greedy request the tokens the cpu engine gives (e2e_test_cuda_emulated).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "device_engine.hpp"
#include "engine/batch_sampler.hpp"
#include "parity_fixture.hpp"

namespace tessera {
namespace {

// Three sequences' prompts in one step, each chunk scan-only or not, on fresh sequences.
dsv4::Logits step(DeviceEngine& e, const std::vector<std::vector<int32_t>>& prompts,
                  const std::vector<bool>& scan_only) {
  std::vector<std::unique_ptr<SequenceKv>> kv;
  dsv4::ForwardBatch batch;
  for (size_t s = 0; s < prompts.size(); ++s) {
    kv.push_back(e.new_sequence());
    batch.chunks.push_back({kv.back().get(), std::span(prompts[s]), false, scan_only[s]});
  }
  return e.model->forward(batch);
}

bool same_scan(const ops::RowScan& a, const ops::RowScan& b) {
  return a.max == b.max && a.argmax == b.argmax && a.finite == b.finite;
}

TEST(DeviceScanOnlyRows, ComeBackWithoutValuesAndTheOthersGathered) {
  const auto options =
      testing::parity_options(std::filesystem::path(TESSERA_SOURCE_DIR) / "models/tiny-dsv4", "{}");
  DeviceEngine e("emulated", options);
  const std::vector<std::vector<int32_t>> prompts{synthetic_prompt(4, 5), synthetic_prompt(3, 11),
                                                  synthetic_prompt(2, 23)};
  const dsv4::Logits full = step(e, prompts, {false, false, false});
  const int64_t V = full.vocab;
  ASSERT_TRUE(full.value_row.empty());
  ASSERT_EQ(full.values.size(), static_cast<size_t>(3 * V));

  const dsv4::Logits mixed = step(e, prompts, {true, false, true});
  ASSERT_EQ(mixed.rows(), 3);
  EXPECT_EQ(mixed.value_row, (std::vector<int64_t>{-1, 0, -1}));
  ASSERT_EQ(mixed.values.size(), static_cast<size_t>(V));  // one row copied back
  EXPECT_EQ(mixed.row(0), nullptr);
  EXPECT_EQ(mixed.row(2), nullptr);
  EXPECT_EQ(std::memcmp(mixed.row(1), full.row(1), static_cast<size_t>(V) * sizeof(float)), 0);
  ASSERT_EQ(mixed.group_max.size(), full.group_max.size());
  EXPECT_EQ(std::memcmp(mixed.group_max.data(), full.group_max.data(),
                        full.group_max.size() * sizeof(float)),
            0);
  for (int64_t r = 0; r < 3; ++r) {
    EXPECT_TRUE(same_scan(mixed.scans[static_cast<size_t>(r)], full.scans[static_cast<size_t>(r)]))
        << "row " << r;
  }

  const dsv4::Logits none = step(e, prompts, {true, true, true});
  EXPECT_TRUE(none.values.empty());
  EXPECT_EQ(none.rows(), 3);
  for (int64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(none.row(r), nullptr);
    EXPECT_TRUE(same_scan(none.scans[static_cast<size_t>(r)], full.scans[static_cast<size_t>(r)]))
        << "row " << r;
  }
}

// The engine's choice: a row nobody samples comes without values; a sampled one only when it is
// greedy and the sampler takes greedy rows by their scans.
TEST(DeviceScanOnlyRows, TheEngineAsksForThemOnlyWhereTheSamplerAnswersWithoutValues) {
  const auto options =
      testing::parity_options(std::filesystem::path(TESSERA_SOURCE_DIR) / "models/tiny-dsv4", "{}");
  PluginRegistry registry;
  registry.discover(options.plugin_dirs);
  const PluginInstance sampler = registry.create(registry.find(TS_KIND_SAMPLER, "standard"), "{}",
                                                 ts_device{TS_DEVICE_CPU, 0, nullptr});
  const engine::BatchSampler batch(sampler);
  ts_sampling_params p{};
  p.temperature = 0.0f;
  p.top_p = 1.0f;
  p.repetition_penalty = 1.0f;
  EXPECT_TRUE(batch.scan_only(p, true));
  EXPECT_TRUE(batch.scan_only(p, false));
  p.logprobs = 1;
  EXPECT_FALSE(batch.scan_only(p, true));
  EXPECT_TRUE(batch.scan_only(p, false));  // not sampled this step
  p.logprobs = 0;
  p.temperature = 0.7f;
  EXPECT_FALSE(batch.scan_only(p, true));
  p.temperature = 0.0f;
  p.repetition_penalty = 1.1f;
  EXPECT_FALSE(batch.scan_only(p, true));
}

}  // namespace
}  // namespace tessera
