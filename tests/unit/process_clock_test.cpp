// seconds_since_process_start (util/process_clock.hpp): positive, below the time this test has
// plausibly run, and growing with the wall clock.
#include "util/process_clock.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

TEST(ProcessClock, CountsFromTheProcessStart) {
  const double a = tessera::seconds_since_process_start();
  ASSERT_GE(a, 0.0);
  EXPECT_LT(a, 600.0) << "more than ten minutes since this test process started";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double b = tessera::seconds_since_process_start();
  EXPECT_GE(b - a, 0.2);  // /proc/uptime has 10 ms steps
  EXPECT_LT(b - a, 5.0);
}
