// bench/thread_handoff: the two threads' handoff, and what it reports when the machine does not run
// them at once.
#include "bench/thread_handoff.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include "bench/engine_bench.hpp"

namespace tessera::bench {
namespace {

// Both threads on one CPU: each ping waits for a time slice, so no batch finishes before the
// deadline and both numbers say so (-1) instead of reporting a scheduler's time slice as a
// cache's latency.
TEST(ThreadHandoff, ThreadsSharingOneCpuGiveNoNumbers) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  int first = 0;
  while (!CPU_ISSET(first, &before)) {
    ++first;
  }
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // the helper thread inherits it
  const ThreadHandoff h = measure_thread_handoff();
  ASSERT_EQ(sched_setaffinity(0, sizeof before, &before), 0);
  EXPECT_EQ(h.round_trip_ns, -1.0);
  EXPECT_EQ(h.read_mib_us, -1.0);
}

TEST(ThreadHandoff, TheEngineBenchPrintsEachRunsNumbersOrNa) {
  engine::EngineBenchRow one, many;
  one.concurrency = 1;
  one.round_trip_ns = {48.4, -1.0};
  one.read_mib_us = {30.2, -1.0};
  many.concurrency = 64;
  many.round_trip_ns = {385.0, 52.0};
  many.read_mib_us = {155.0, 29.6};
  const std::string text = engine::format_engine_bench({}, {one, many});
  EXPECT_NE(text.find("at 1: 48 ns / 30 µs, n/a / n/a; at 64: 385 ns / 155 µs, 52 ns / 30 µs\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace tessera::bench
