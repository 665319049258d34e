// tessera bench device (bench/device_bench.hpp) and the timing it rests on:
// - StepTimeline on the cpu device and on the emulated CUDA device: labelled intervals add up
//   per label in first-seen order, an interval holding real work is longer than an empty one, and
//   marking before begin() is refused;
// - the bench on tests/data/parity/tiny-fp8 with the mma attention over the fp8 cache on the
//   emulated device (every block of the step in the breakdown, their sum within the step's
//   wall time) and with the reference attention on the CPU (no breakdown), bytes per step and
//   GB/s from the sizing model; a batch the kv pool cannot hold is refused naming memory_gib;
// - tessera bench attention (bench/attention_bench.hpp): reference and mma on the emulated device
//   at two contexts, each plugin's block timed, kv bytes growing with the context; a CPU
//   configuration is refused naming the device.
#include "bench/device_bench.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "bench/attention_bench.hpp"
#include "device/cpu_device.hpp"
#include "device/open_device.hpp"
#include "device/step_timeline.hpp"
#include "util/check.hpp"

namespace {

using tessera::bench::DeviceBenchOptions;
using tessera::bench::run_device_bench;

TEST(StepTimeline, IntervalsAddUpPerLabelOnTheCpu) {
  tessera::device::CpuDevice cpu;
  const tessera::device::Stream stream = cpu.create_stream();
  tessera::device::StepTimeline timeline(cpu, stream);
  EXPECT_THROW(timeline.mark("early"), tessera::Error);
  for (int step = 0; step < 2; ++step) {
    timeline.begin();
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
    timeline.mark("sleep");
    timeline.mark("nothing");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    timeline.mark("sleep");
    timeline.finish();
  }
  ASSERT_EQ(timeline.totals_ms().size(), 2u);
  EXPECT_EQ(timeline.totals_ms()[0].first, "sleep");
  EXPECT_EQ(timeline.totals_ms()[1].first, "nothing");
  EXPECT_GE(timeline.totals_ms()[0].second, 12.0);  // 2 steps x (4 + 2) ms
  EXPECT_LT(timeline.totals_ms()[1].second, timeline.totals_ms()[0].second);
  EXPECT_EQ(timeline.steps(), 2);
  timeline.clear();
  EXPECT_TRUE(timeline.totals_ms().empty());
}

TEST(StepTimeline, EmulatedEventsTimeTheWorkTheStreamRan) {
  const auto device = tessera::device::open_device({"cuda", 0, "emulated"});
  const tessera::device::Stream stream = device->create_stream();
  tessera::device::StepTimeline timeline(*device, stream);
  const size_t bytes = 64u << 20;
  const tessera::device::DeviceBuffer a = device->allocate(bytes), b = device->allocate(bytes);
  timeline.begin();
  timeline.mark("empty");
  for (int i = 0; i < 4; ++i)
    device->copy(b.data(), a.data(), bytes, tessera::device::CopyKind::kDeviceToDevice, stream);
  timeline.mark("copies");
  timeline.finish();
  ASSERT_EQ(timeline.totals_ms().size(), 2u);
  EXPECT_GE(timeline.totals_ms()[0].second, 0.0);
  EXPECT_GT(timeline.totals_ms()[1].second, timeline.totals_ms()[0].second);
}

std::string write_config(const std::string& name, const std::string& executor,
                         const std::string& attention, double memory_gib) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << "[model]\npath = \"" << TESSERA_SOURCE_DIR
                      << "/tests/data/parity/tiny-fp8\"\nmax_context = 256\n[executor]\n"
                      << executor << "\nthreads = 1\n[kv_cache]\nplugin = \"fp8\"\n"
                      << "page_size = 16\nmemory_gib = " << memory_gib
                      << "\n[attention]\nplugin = \"" << attention
                      << "\"\n[sampler]\nplugin = \"standard\"\n[plugins]\nsearch_path = [\""
                      << TESSERA_PLUGIN_DIR << "\"]\n";
  return path.string();
}

TEST(DeviceBench, EmulatedDeviceRowsAndBreakdown) {
  DeviceBenchOptions o;
  o.config_path = write_config("device_bench_emulated.toml",
                               "device = \"cuda\"\ncuda_module = \"emulated\"", "mma", 0.05);
  o.batches = {1, 2};
  o.context = 8;
  o.steps = 1;
  o.prefill = {12};
  o.prefill_chunk = 8;  // 8 + 4 tokens
  const auto r = run_device_bench(o);
  ASSERT_EQ(r.prefills.size(), 1u);
  EXPECT_EQ(r.prefills[0].tokens, 12);
  EXPECT_GT(r.prefills[0].seconds, 0.0);
  EXPECT_FALSE(r.prefills[0].breakdown_ms.empty());
  EXPECT_NE(r.device.find("emulator"), std::string::npos) << r.device;
  EXPECT_EQ(r.attention, "mma");
  EXPECT_EQ(r.kv_cache, "fp8");
  EXPECT_GT(r.copy_gbps, 0.0);
  ASSERT_EQ(r.rows.size(), 2u);
  for (const auto& row : r.rows) {
    EXPECT_GT(row.ms_per_step, 0.0);
    EXPECT_GT(row.weight_bytes, 0.0);
    EXPECT_GT(row.kv_bytes, 0.0);
    EXPECT_GT(row.gbps, 0.0);
    double sum = 0;
    std::string labels;
    for (const auto& [label, ms] : row.breakdown_ms) {
      EXPECT_GE(ms, 0.0) << label;
      sum += ms;
      labels += label + ";";
    }
    for (const char* block : {"embedding", "mHC + norms", "attention: compressors",
                              "attention: plugin (indexer + sparse attention)",
                              "MoE: experts + combine", "head + logits to host"})
      EXPECT_NE(labels.find(block), std::string::npos) << block << " not in " << labels;
    EXPECT_TRUE(row.graphs) << "the timed decode steps replay graphs on the emulated device";
    EXPECT_GT(row.ms_per_step_eager, 0.0);
    EXPECT_LE(sum, row.ms_per_step_eager * 1.05 + 1.0) << "the events cover more than the step";
    EXPECT_GE(sum, row.ms_per_step_eager * 0.3) << "the events miss most of the step";
  }
  EXPECT_GT(r.rows[1].weight_bytes, r.rows[0].weight_bytes);  // more experts touched
  const std::string table = tessera::bench::format_device_bench(o, r);
  EXPECT_NE(table.find("| 2 |"), std::string::npos) << table;
  EXPECT_NE(table.find("MoE: experts + combine"), std::string::npos) << table;
  EXPECT_NE(table.find("replay piecewise CUDA graphs"), std::string::npos) << table;
  EXPECT_NE(table.find("| 12 |"), std::string::npos) << table;  // the prefill row
}

TEST(DeviceBench, CpuRowsWithoutBreakdownAndTheRefusalOfAnOversizedBatch) {
  DeviceBenchOptions o;
  o.config_path = write_config("device_bench_cpu.toml", "device = \"cpu\"", "reference", 0.002);
  o.batches = {1, 3};
  o.context = 16;
  o.steps = 2;
  const auto r = run_device_bench(o);
  EXPECT_NE(r.device.find("cpu"), std::string::npos);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_TRUE(r.rows[0].breakdown_ms.empty());
  EXPECT_GT(r.rows[0].gbps, 0.0);
  o.batches = {4096};
  try {
    (void)run_device_bench(o);
    ADD_FAILURE() << "a batch of 4096 x 19 tokens fit 2 MiB of kv cache";
  } catch (const tessera::Error& e) {
    EXPECT_NE(std::string(e.what()).find("memory_gib"), std::string::npos) << e.what();
  }
}

TEST(AttentionBench, BothPluginsOnTheEmulatedDeviceAndTheRefusalOfTheCpu) {
  tessera::bench::AttentionBenchOptions o;
  o.config_path = write_config("attention_bench_emulated.toml",
                               "device = \"cuda\"\ncuda_module = \"emulated\"", "mma", 0.05);
  o.contexts = {8, 40};
  o.batches = {1};
  o.steps = 1;
  const auto r = tessera::bench::run_attention_bench(o);
  EXPECT_NE(r.device.find("emulator"), std::string::npos) << r.device;
  EXPECT_EQ(r.kv_cache, "fp8");
  ASSERT_EQ(r.rows.size(), 2u);
  for (const auto& row : r.rows) {
    ASSERT_EQ(row.cells.size(), 2u);
    for (const auto& cell : row.cells) {
      EXPECT_GT(cell.plugin_ms, 0.0) << row.context;
      EXPECT_LT(cell.plugin_ms, cell.step_ms) << "the plugin's block is part of the step";
    }
  }
  EXPECT_GT(r.rows[1].kv_bytes, r.rows[0].kv_bytes) << "a longer context reads more entries";
  const std::string table = tessera::bench::format_attention_bench(o, r);
  EXPECT_NE(table.find("`mma` speed-up over `reference`"), std::string::npos) << table;
  EXPECT_NE(table.find("| 40 | 1 |"), std::string::npos) << table;

  o.config_path = write_config("attention_bench_cpu.toml", "device = \"cpu\"", "reference", 0.01);
  try {
    (void)tessera::bench::run_attention_bench(o);
    ADD_FAILURE() << "bench attention ran on the CPU engine";
  } catch (const tessera::Error& e) {
    EXPECT_NE(std::string(e.what()).find("device = \"cpu\""), std::string::npos) << e.what();
  }
}

}  // namespace
