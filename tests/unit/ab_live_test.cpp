// Live A/B building blocks: the traffic split (hash assignment, explicit arm, stability, shares
// within binomial bounds for 200 and 20000 requests) and the running comparison (/v1/ab/report
// numbers, arm-labelled Prometheus series, concurrent recording).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "comparison/arm_assignment.hpp"
#include "comparison/live_comparison.hpp"
#include "util/check.hpp"

namespace tessera::ab {
namespace {

TEST(AbArmAssignment, Fnv1aMatchesThePublishedVectors) {
  // Test vectors of the FNV reference (isthe.com/chongo/tech/comp/fnv): 64-bit FNV-1a.
  EXPECT_EQ(ArmAssignment::fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(ArmAssignment::fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(ArmAssignment::fnv1a64("foobar"), 0x85944171f73967e8ull);
}

// Counts per arm of n keys "user-0" .. "user-(n-1)".
std::vector<int64_t> split_of(const ArmAssignment& a, int n) {
  std::vector<int64_t> counts(a.arms().size());
  for (int i = 0; i < n; ++i) ++counts[a.assign("user-" + std::to_string(i))];
  return counts;
}

TEST(AbArmAssignment, SharesFollowTheWeights) {
  // Binomial: |count - n w| within 4 standard deviations sqrt(n w (1 - w)).
  const ArmAssignment even({{"a", 1}, {"b", 1}});
  for (int n : {200, 20000}) {
    const auto c = split_of(even, n);
    const double sd = std::sqrt(n * 0.25);
    EXPECT_NEAR(static_cast<double>(c[0]), n / 2.0, 4 * sd) << n;
    EXPECT_EQ(c[0] + c[1], n);
  }
  const ArmAssignment skew({{"control", 9}, {"fp8", 1}});
  const auto c = split_of(skew, 20000);
  EXPECT_NEAR(static_cast<double>(c[1]), 2000.0, 4 * std::sqrt(20000 * 0.09));
  const ArmAssignment three({{"a", 1}, {"b", 0}, {"c", 3}});
  const auto t = split_of(three, 4000);
  EXPECT_EQ(t[1], 0);  // weight 0: never assigned by hash
  EXPECT_NEAR(static_cast<double>(t[0]), 1000.0, 4 * std::sqrt(4000 * 0.25 * 0.75));
}

TEST(AbArmAssignment, StableAndExplicit) {
  const ArmAssignment a({{"a", 1}, {"b", 1}});
  const ArmAssignment same({{"a", 1}, {"b", 1}});
  for (int i = 0; i < 100; ++i) {
    const std::string key = "req-" + std::to_string(i);
    EXPECT_EQ(a.assign(key), a.assign(key));
    EXPECT_EQ(a.assign(key), same.assign(key));  // a user stays on one arm across restarts
  }
  EXPECT_EQ(a.assign("anything", "b"), 1u);
  EXPECT_EQ(a.assign("anything", "a"), 0u);
  const ArmAssignment zero({{"a", 1}, {"b", 0}});
  EXPECT_EQ(zero.assign("x", "b"), 1u);  // explicit wins over a zero share
  EXPECT_THROW(a.assign("x", "c"), Error);
  for (int i = 0; i < 1000; ++i) {
    const double u = ArmAssignment::unit_hash(std::to_string(i));
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(AbArmAssignment, RefusesBadSplits) {
  EXPECT_THROW(ArmAssignment({{"a", 1}}), Error);
  EXPECT_THROW(ArmAssignment({{"a", 1}, {"a", 1}}), Error);
  EXPECT_THROW(ArmAssignment({{"a", 1}, {"B", 1}}), Error);
  EXPECT_THROW(ArmAssignment({{"a", 1}, {"", 1}}), Error);
  EXPECT_THROW(ArmAssignment({{"a", -1}, {"b", 1}}), Error);
  EXPECT_THROW(ArmAssignment({{"a", 0}, {"b", 0}}), Error);
  EXPECT_THROW(ArmAssignment({{"a", NAN}, {"b", 1}}), Error);
}

TEST(AbLiveComparison, ReportAndLabels) {
  LiveComparison live({"a", "b"}, /*window=*/3);
  live.record(0, {"stop", false, false, 0.1, 1.1, 5, 10});
  live.record(0, {"length", false, true, 0.2, 2.2, 5, 20});
  live.record(1, {"repetition", true, true, 0.3, 0.8, 5, 5});
  // Four more for b: the window keeps the last three latencies (0.8 drops out).
  for (double l : {1.0, 2.0, 3.0, 4.0}) live.record(1, {"stop", false, false, 0.5, l, 5, 1});
  const auto r = live.report();
  EXPECT_EQ(r["requests"], 7);
  const auto& a = r["arms"]["a"];
  EXPECT_EQ(a["requests"], 2);
  EXPECT_NEAR(a["share"].get<double>(), 2.0 / 7, 1e-15);
  EXPECT_EQ(a["finish_reasons"]["length"], 1);
  EXPECT_EQ(a["repetition_hits"], 1);
  EXPECT_EQ(a["repetition_stops"], 0);
  EXPECT_NEAR(a["tokens_per_s"].get<double>(), 30.0 / (1.0 + 2.0), 1e-12);
  EXPECT_NEAR(a["latency_s"]["p50"].get<double>(), 1.65, 1e-12);
  const auto& b = r["arms"]["b"];
  EXPECT_EQ(b["repetition_stops"], 1);
  EXPECT_EQ(b["latency_s"]["count"], 3);
  EXPECT_DOUBLE_EQ(b["latency_s"]["min"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(b["latency_s"]["max"].get<double>(), 4.0);

  PrometheusWriter w;
  live.write_prometheus(w, {{"model_name", "tiny"}});
  const std::string& text = w.text();
  EXPECT_NE(text.find("tessera_ab_requests_total{model_name=\"tiny\",arm=\"a\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tessera_ab_requests_total{model_name=\"tiny\",arm=\"b\"} 5"),
            std::string::npos);
  EXPECT_NE(text.find("tessera_ab_finished_total{model_name=\"tiny\",arm=\"b\",finish_reason="
                      "\"repetition\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("tessera_ab_repetition_stops_total{model_name=\"tiny\",arm=\"b\"} 1"),
            std::string::npos);
  EXPECT_NE(
      text.find("tessera_ab_e2e_request_latency_seconds_count{model_name=\"tiny\",arm=\"b\"} 5"),
      std::string::npos);
  EXPECT_THROW(live.record(2, {}), Error);
}

TEST(AbLiveComparison, ConcurrentRecording) {
  LiveComparison live({"a", "b"}, 64);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&live, t] {
      for (int i = 0; i < 500; ++i)
        live.record(static_cast<size_t>((t + i) % 2), {"stop", false, false, 0.01, 0.02, 1, 1});
    });
  for (auto& th : threads) th.join();
  const auto r = live.report();
  EXPECT_EQ(r["requests"], 2000);
  EXPECT_EQ(r["arms"]["a"]["output_tokens"].get<int64_t>() +
                r["arms"]["b"]["output_tokens"].get<int64_t>(),
            2000);
}

}  // namespace
}  // namespace tessera::ab
