// Preemption by recomputation: with the cache oversubscribed 4x, the engine preempts the
// lowest-priority sequences, recomputes them later, never crashes or corrupts, and every output
// equals the unpressured run (fixed seeds, greedy and sampled).
#include <gtest/gtest.h>

#include <map>

#include "engine_harness.hpp"

namespace tessera {
namespace {

// The exact-storage cache: equality across batch shapes is about the engine, not about bf16
// rounding (docs/engine.md "Determinism").
constexpr const char* kExact = R"({"storage":"fp32"})";

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Main pages one sequence of `total` tokens holds at its end (window + compressed entries).
int64_t main_pages_at_end(const dsv4::ModelConfig& c, int64_t page, int64_t total) {
  int64_t n = 0;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const int64_t m = c.compress_ratio(l);
    n += ceil_div(c.window, page) + 1;
    if (m > 0) n += ceil_div(total / m, page);
  }
  return n;
}

std::vector<engine::Request> workload() {
  std::vector<engine::Request> requests;
  for (int i = 0; i < 24; ++i) {
    auto prompt = engine_test::make_prompt(500 + i, 60 + 17 * (i % 9));
    auto r = i % 3 == 0 ? engine_test::greedy(prompt, 48)
                        : engine_test::sampled(prompt, 48, 1000 + static_cast<uint64_t>(i));
    r.priority = i % 4;  // lower runs first, preempted last
    requests.push_back(std::move(r));
  }
  return requests;
}

TEST(EnginePreemption, FourfoldOversubscriptionGivesTheUnpressuredOutputs) {
  const auto requests = workload();
  const auto options = engine_test::engine_options(/*max_running=*/24, /*max_batched=*/256,
                                                   /*chunk=*/32);
  std::vector<engine_test::Output> unpressured;
  int64_t demand = 0;
  {
    Runtime rt(engine_test::runtime_options(0.02, 16, kExact));
    for (const auto& r : requests)
      demand += main_pages_at_end(rt.model_config(), 16,
                                  static_cast<int64_t>(r.prompt.size()) + *r.max_tokens);
    engine::Engine engine(rt, options);
    unpressured = engine_test::run_all(engine, requests);
    EXPECT_EQ(engine.stats().preemptions, 0);
  }
  // Size the pool to a quarter of what all requests hold together at their end.
  double gib = 0.02;
  {
    Runtime probe(engine_test::runtime_options(gib, 16, kExact));
    gib *=
        static_cast<double>(demand) / 4.0 / static_cast<double>(probe.pools().main.total_pages());
  }
  Runtime rt(engine_test::runtime_options(gib, 16, kExact));
  const int64_t capacity = rt.pools().main.total_pages();
  ASSERT_GE(static_cast<double>(demand) / static_cast<double>(capacity), 3.9)
      << demand << " pages demanded, " << capacity << " in the pool";
  engine::Engine engine(rt, options);
  const auto pressured = engine_test::run_all(engine, requests);
  const engine::EngineStats s = engine.stats();
  EXPECT_GT(s.preemptions, 0);
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_TRUE(pressured[i].finish) << i;
    EXPECT_EQ(*pressured[i].finish, engine::FinishReason::kLength) << pressured[i].error;
    EXPECT_EQ(pressured[i].tokens, unpressured[i].tokens) << "request " << i;
    for (size_t k = 0; k < pressured[i].tokens.size(); ++k)
      if (pressured[i].tokens[k] != unpressured[i].tokens[k]) {
        std::printf("request %zu diverges at output %zu\n", i, k);
        break;
      }
  }
  EXPECT_EQ(s.main_pages_free, s.main_pages_total);
  EXPECT_EQ(s.indexer_pages_free, s.indexer_pages_total);
  std::printf("demand %lld pages, pool %lld (%.1fx), preemptions %lld, steps %lld\n",
              static_cast<long long>(demand), static_cast<long long>(capacity),
              static_cast<double>(demand) / static_cast<double>(capacity),
              static_cast<long long>(s.preemptions), static_cast<long long>(s.steps));
}

TEST(EnginePreemption, LowerPriorityValueRunsFirstAndIsPreemptedLast) {
  // A pool for about three whole sequences; twelve priority-5 requests, then one priority-0.
  double gib = 0.02;
  const int64_t total = 120 + 64;
  {
    Runtime probe(engine_test::runtime_options(gib, 16, kExact));
    const int64_t one = main_pages_at_end(probe.model_config(), 16, total) + 8;
    gib *= static_cast<double>(one * 3) / static_cast<double>(probe.pools().main.total_pages());
  }
  Runtime rt(engine_test::runtime_options(gib, 16, kExact));
  engine::Engine engine(rt, engine_test::engine_options(24, 256, 32));
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<uint64_t> finish_order;
  std::map<uint64_t, engine::FinishReason> reasons;
  auto record = [&](const engine::Event& e) {
    if (!e.finish) return;
    std::lock_guard lock(mutex);
    finish_order.push_back(e.request_id);
    reasons[e.request_id] = *e.finish;
    cv.notify_all();
  };
  for (int i = 0; i < 12; ++i) {
    auto r = engine_test::greedy(engine_test::make_prompt(700 + i, 120), 64);
    r.priority = 5;
    engine.submit(r, record);
  }
  auto urgent = engine_test::greedy(engine_test::make_prompt(799, 120), 64);
  urgent.priority = 0;
  const uint64_t urgent_id = engine.submit(urgent, record);
  std::unique_lock lock(mutex);
  ASSERT_TRUE(
      cv.wait_for(lock, std::chrono::seconds(120), [&] { return finish_order.size() == 13; }));
  for (const auto& [id, reason] : reasons) EXPECT_EQ(reason, engine::FinishReason::kLength);
  const auto rank =
      std::find(finish_order.begin(), finish_order.end(), urgent_id) - finish_order.begin();
  EXPECT_LE(rank, 4) << "the priority-0 request finished " << rank + 1 << "th of 13";
  EXPECT_GT(engine.stats().preemptions, 0);
}

}  // namespace
}  // namespace tessera
