// The device forward's compressor state (model/device_compressors.hpp, kv/compressor_rings.hpp):
// prefix snapshots taken and restored on the device, sequences sharing a step, the rings' slots
// and their share of the kv budget. The shipped model (ratios 4 and 128, window 128) on the cpu
// backend and the emulated device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "device_engine.hpp"
#include "engine/engine.hpp"
#include "runtime/runtime.hpp"
#include "util/check.hpp"

namespace tessera {
namespace {

const std::filesystem::path kShipped =
    std::filesystem::path(TESSERA_SOURCE_DIR) / "models/tiny-dsv4";

std::vector<int32_t> prompt_of(int64_t n, int32_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    ids[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919 + 13) % vocab);
  return ids;
}

dsv4::Logits run(DeviceEngine& e, SequenceKv& kv, std::span<const int32_t> tokens) {
  dsv4::ForwardBatch batch;
  batch.chunks.push_back({&kv, tokens, true});
  return e.model->forward(batch);
}

double max_difference(const dsv4::Logits& a, int64_t a_row, const dsv4::Logits& b, int64_t b_row) {
  double worst = 0;
  for (int64_t v = 0; v < a.vocab; ++v) {
    worst = std::max(worst, std::fabs(double(a.row(a_row)[v]) - b.row(b_row)[v]));
  }
  return worst;
}

class DeviceCompressorRings : public ::testing::TestWithParam<std::string> {};

// A snapshot at 128 taken inside a step that starts at 126: the previous ratio-4 window
// (positions 124..127) is half in the ring, half in the step's rows. A sequence restored from it
// loads that window into its own ring and continues exactly as the original does, as does one
// that ran the same prompt without any snapshot (the rows being the same on every side).
TEST_P(DeviceCompressorRings, RestoredSnapshotContinuesAsTheSequenceItWasTakenFrom) {
  DeviceEngine e(GetParam(), testing::parity_options(kShipped, "{}"));
  const std::vector<int32_t> prompt = prompt_of(160, static_cast<int32_t>(e.config.vocab_size));
  const auto part = [&](int64_t from, int64_t to) {
    return std::span<const int32_t>(prompt.data() + from, static_cast<size_t>(to - from));
  };
  auto original = e.new_sequence();
  run(e, *original, part(0, 126));
  original->request_snapshot(128);
  run(e, *original, part(126, 130));
  std::vector<PrefixSnapshot> snapshots = original->take_snapshots();
  ASSERT_EQ(snapshots.size(), 1u);
  const dsv4::Logits next = run(e, *original, part(130, 160));

  SequenceKv restored(e.config, *e.kv.pools, snapshots[0]);
  ASSERT_EQ(restored.length(), 128);
  const dsv4::Logits resumed = run(e, restored, part(128, 160));
  // Positions 130..159 of the original against the restored sequence's rows 2..31.
  double worst = 0;
  for (int64_t i = 0; i < 30; ++i) worst = std::max(worst, max_difference(next, i, resumed, i + 2));
  std::printf("[%s] restored against original: max |dlogit| %.3g\n", GetParam().c_str(), worst);
  // A ring left empty, or a snapshot without the ring's half of the window, moves them by 0.05
  // or more (each checked by removing that copy).
  EXPECT_LE(worst, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Backends, DeviceCompressorRings, ::testing::Values("cpu", "emulated"));

// Two sequences sharing steps (each in its own ring slot, windows closing in different steps)
// give what each gives alone. The plan is the host's and the same on every backend (the emulated
// device runs it in the tests above and in device_model_test), so the cpu backend checks it.
TEST(DeviceCompressorRingSlots, SequencesSharingStepsKeepTheirOwnWindows) {
  DeviceEngine e("cpu", testing::parity_options(kShipped, "{}"));
  const std::vector<int32_t> a = prompt_of(140, static_cast<int32_t>(e.config.vocab_size));
  const std::vector<int32_t> b(a.rbegin(), a.rend());
  // a's step edges; b's are one token earlier (its windows close in other steps).
  const std::vector<int64_t> a_edges = {0, 37, 66, 67, 70, 130, 131, 140};
  std::vector<int64_t> b_edges = a_edges;
  for (size_t s = 1; s + 1 < b_edges.size(); ++s) --b_edges[s];
  auto solo = e.new_sequence(), first = e.new_sequence(), second = e.new_sequence();
  double worst = 0;
  for (size_t s = 0; s + 1 < a_edges.size(); ++s) {
    const std::span<const int32_t> a_part(a.data() + a_edges[s],
                                          static_cast<size_t>(a_edges[s + 1] - a_edges[s]));
    const std::span<const int32_t> b_part(b.data() + b_edges[s],
                                          static_cast<size_t>(b_edges[s + 1] - b_edges[s]));
    const dsv4::Logits alone = run(e, *solo, b_part);
    dsv4::ForwardBatch batch;
    batch.chunks.push_back({first.get(), a_part, false});
    batch.chunks.push_back({second.get(), b_part, true});
    const dsv4::Logits together = e.model->forward(batch);
    for (size_t i = 0; i < b_part.size(); ++i) {  // b's rows follow a's last
      const auto row = static_cast<int64_t>(i);
      worst = std::max(worst, max_difference(alone, row, together, row + 1));
    }
  }
  // Their compressor state is on the device only: no host window buffers.
  EXPECT_EQ(first->compressor_bytes(), 0);
  EXPECT_EQ(second->compressor_bytes(), 0);
  std::printf("batched against alone: max |dlogit| %.3g\n", worst);
  EXPECT_LE(worst, 1e-4);  // both sequences in one ring slot: 0.88
}

// The cpu backend, counting the stream's synchronisations.
class CountingCpuDevice : public device::CpuDevice {
 public:
  void synchronize(const device::Stream& stream) override {
    ++synchronizations;
    CpuDevice::synchronize(stream);
  }
  int64_t synchronizations = 0;
};

// The compressors' state is on the device, so a step waits for its stream once, at its end,
// whatever windows close and whether a snapshot is taken. Counted on a second run of the same
// steps: on the first, the step buffers grow, and growing one waits for the work that may still
// read it.
TEST(DeviceCompressorRingSlots, AStepWaitsForTheDeviceOnce) {
  auto counting = std::make_unique<CountingCpuDevice>();
  CountingCpuDevice& device = *counting;
  DeviceEngine e(std::move(counting), testing::parity_options(kShipped, "{}"));
  const std::vector<int32_t> prompt = prompt_of(200, static_cast<int32_t>(e.config.vocab_size));
  const auto part = [&](int64_t from, int64_t n) {
    return std::span<const int32_t>(prompt.data() + from, static_cast<size_t>(n));
  };
  // The waits of each step: a prefill closing 31 ratio-4 windows; a step of two sequences, one
  // closing ratio-128 windows and taking a snapshot; three decode steps.
  const auto waits = [&]() {
    auto a = e.new_sequence(), b = e.new_sequence();
    std::vector<std::vector<dsv4::SequenceChunk>> steps = {
        {{a.get(), part(0, 126), false}},
        {{a.get(), part(126, 3), false}, {b.get(), part(0, 130), false}}};
    for (int64_t i = 0; i < 3; ++i) {
      steps.push_back({{a.get(), part(129 + i, 1), false}, {b.get(), part(130 + i, 1), false}});
    }
    b->request_snapshot(128);
    std::vector<int64_t> out;
    for (auto& chunks : steps) {
      dsv4::ForwardBatch batch;
      batch.chunks = std::move(chunks);
      const int64_t before = device.synchronizations;
      e.model->forward(batch);
      out.push_back(device.synchronizations - before);
    }
    EXPECT_EQ(b->take_snapshots().size(), 1u);
    return out;
  };
  waits();
  EXPECT_EQ(waits(), std::vector<int64_t>(5, 1));
}

// One slot per running sequence: a step with more sequences than slots is refused before any
// work, naming the setting; a reset sequence gives its slot back.
TEST(DeviceCompressorRingSlots, MoreSequencesThanSlotsAreRefusedAndResetFreesTheSlot) {
  RuntimeOptions options = testing::parity_options(kShipped, "{}");
  options.max_running_sequences = 1;
  DeviceEngine e("cpu", options);
  EXPECT_EQ(e.kv.pools->rings.slots(), 1);
  const std::vector<int32_t> tokens = prompt_of(5, 100);
  auto one = e.new_sequence(), two = e.new_sequence();
  run(e, *one, tokens);
  try {
    run(e, *two, tokens);
    ADD_FAILURE() << "a second sequence ran with one slot";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("scheduler.max_running_sequences"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(two->length(), 0);  // nothing was written
  one->reset();
  EXPECT_EQ(e.kv.pools->rings.free_slots(), 1);
  run(e, *two, tokens);
  EXPECT_EQ(two->length(), 5);
}

// An engine that would run more sequences than the device holds compressor state for is refused
// at start-up, naming both numbers.
TEST(DeviceCompressorRingSlots, AnEngineRunningMoreSequencesThanSlotsIsRefused) {
  RuntimeOptions options = testing::parity_options(kShipped, "{}");
  options.device = "cuda";
  options.cuda_module = "emulated";
  options.max_running_sequences = 2;
  Runtime runtime(options);
  engine::EngineOptions engine_options;
  engine_options.max_running_sequences = 3;
  try {
    engine::Engine engine(runtime, engine_options, nullptr);
    ADD_FAILURE() << "an engine of 3 sequences ran on rings of 2";
  } catch (const Error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("max_running_sequences = 3"), std::string::npos) << what;
    EXPECT_NE(what.find("for 2 sequences"), std::string::npos) << what;
  }
  engine_options.max_running_sequences = 2;
  engine::Engine fits(runtime, engine_options, nullptr);
}

// The rings come out of kv_cache.memory_gib: the pages shrink by their bytes, and a budget that
// cannot hold them is refused at start-up naming both settings.
TEST(DeviceCompressorRingSlots, RingsAreTakenFromTheKvBudget) {
  RuntimeOptions options = testing::parity_options(kShipped, "{}");
  options.max_running_sequences = 4;
  DeviceEngine few("cpu", options);
  options.max_running_sequences = 256;
  DeviceEngine many("cpu", options);
  const uint64_t extra = many.kv.plan.ring_bytes - few.kv.plan.ring_bytes;
  EXPECT_EQ(many.kv.plan.ring_bytes, CompressorRings::bytes(many.config, 256));
  EXPECT_GT(extra, 0u);
  EXPECT_LT(many.kv.plan.bytes, few.kv.plan.bytes);
  EXPECT_LE(many.kv.plan.bytes + many.kv.plan.ring_bytes, kv_pool_bytes(options));

  options.memory_gib = 0.001;
  try {
    DeviceEngine refused("cpu", options);
    ADD_FAILURE() << "rings of 256 sequences fit in 1 MiB";
  } catch (const Error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("kv_cache.memory_gib"), std::string::npos) << what;
    EXPECT_NE(what.find("max_running_sequences = 256"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace tessera
