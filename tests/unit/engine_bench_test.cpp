// `tessera bench engine` (bench/engine_bench.hpp) on the tiny preset: rounds alternate the
// levels and each row sums its level's runs; the host time is its three parts; each run records
// the threads' handoff measured before it.
#include "bench/engine_bench.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "bench/machine.hpp"

namespace tessera::engine {
namespace {

// The tiny preset's bench with 5-token prompts.
EngineBenchOptions tiny_bench(std::vector<int64_t> concurrency, int64_t requests,
                              int64_t output_tokens, int64_t rounds) {
  EngineBenchOptions o;
  o.preset = "tiny";
  o.plugin_dir = TESSERA_PLUGIN_DIR;
  o.concurrency = std::move(concurrency);
  o.requests = requests;
  o.prompt_tokens = 5;
  o.output_tokens = output_tokens;
  o.rounds = rounds;
  o.memory_gib = 0.02;
  return o;
}

TEST(EngineBench, RoundsAlternateTheLevelsAndEachRowSumsItsRuns) {
  const EngineBenchOptions o = tiny_bench({1, 4}, 6, 3, 3);
  const std::vector<EngineBenchRow> rows = run_engine_bench(o);
  ASSERT_EQ(rows.size(), 2u);
  for (const EngineBenchRow& r : rows) {
    SCOPED_TRACE(r.concurrency);
    ASSERT_EQ(r.round_tokens_per_second.size(), 3u);
    EXPECT_EQ(r.requests, 6);
    // Every round's requests, each with its 3 tokens (ignore_eos), in the summed seconds.
    EXPECT_NEAR(r.output_tokens_per_second * r.seconds, 3.0 * 6 * 3, 1e-6);
    EXPECT_GT(r.steps, 0);
    EXPECT_NEAR(r.host_us_per_step,
                r.schedule_us_per_step + r.sample_us_per_step + r.output_us_per_step, 1e-6);
    for (double tps : r.round_tokens_per_second) {
      EXPECT_GT(tps, 0);
    }
    // The threads' handoff, measured before each run: a time (a cache line cannot cross cores in
    // under a nanosecond, nor 1 MiB in under a microsecond), or -1 where a busy machine did not
    // run both threads at once (thread_handoff_test).
    ASSERT_EQ(r.round_trip_ns.size(), 3u);
    ASSERT_EQ(r.read_mib_us.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(r.round_trip_ns[i] == -1.0 || r.round_trip_ns[i] > 1.0) << r.round_trip_ns[i];
      EXPECT_TRUE(r.read_mib_us[i] == -1.0 || r.read_mib_us[i] > 1.0) << r.read_mib_us[i];
    }
  }
  // Concurrency 1 decodes one token per step (after each prompt's prefill step): 6 x 3 per round.
  EXPECT_EQ(rows[0].steps, 3 * 6 * 3);
  const std::string text = format_engine_bench(o, rows);
  EXPECT_NE(text.find("over 3 rounds; round by round"), std::string::npos) << text;
  EXPECT_NE(text.find("before each run, two threads' cache-line round trip"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nmachine: " + bench::machine_description() + "\n\n| concurrency"),
            std::string::npos)
      << text;
}

// One output token per request measures prefill alone; the warm-up wave asks for no more tokens
// than the run allows (it asked for 2 and the engine refused it: "max_tokens = 2 is outside
// [1, 1]").
TEST(EngineBench, OneOutputTokenMeasuresPrefillAlone) {
  const std::vector<EngineBenchRow> rows = run_engine_bench(tiny_bench({2}, 4, 1, 1));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NEAR(rows[0].output_tokens_per_second * rows[0].seconds, 4.0, 1e-6);
  EXPECT_GT(rows[0].steps, 0);
}

}  // namespace
}  // namespace tessera::engine
