// Abort from another thread: the request ends with reason "abort" and its pages are back in the
// pool within one step; waiting requests can be aborted before they run; unknown and finished ids
// are ignored.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine_harness.hpp"

namespace tessera {
namespace {

TEST(EngineAbort, FreesPagesWithinOneStep) {
  Runtime rt(engine_test::runtime_options());
  engine::Engine engine(rt, engine_test::engine_options());
  const engine::EngineStats baseline = engine.stats();
  ASSERT_EQ(baseline.main_pages_free, baseline.main_pages_total);

  std::mutex mutex;
  std::condition_variable cv;
  int64_t tokens = 0;
  std::optional<engine::FinishReason> finish;
  engine::EngineStats at_finish;
  const uint64_t id = engine.submit(engine_test::greedy(engine_test::make_prompt(9, 300), 4000),
                                    [&](const engine::Event& e) {
                                      std::lock_guard lock(mutex);
                                      tokens += static_cast<int64_t>(e.tokens.size());
                                      if (e.finish) {
                                        finish = e.finish;
                                        at_finish = engine.stats();
                                      }
                                      cv.notify_all();
                                    });
  std::unique_lock lock(mutex);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return tokens >= 3; }));
  const engine::EngineStats running = engine.stats();
  EXPECT_LT(running.main_pages_free, baseline.main_pages_free);  // it holds pages
  lock.unlock();
  engine.abort(id);
  lock.lock();
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return finish.has_value(); }));
  EXPECT_EQ(*finish, engine::FinishReason::kAbort);
  EXPECT_LE(at_finish.steps - running.steps, 2);  // the step in flight when abort() came, + 1
  EXPECT_EQ(at_finish.main_pages_free, baseline.main_pages_free);
  EXPECT_EQ(at_finish.indexer_pages_free, baseline.indexer_pages_free);
  EXPECT_EQ(at_finish.in_flight, 0);
}

// Stats first, with others running: the aborted request's final event is delivered only after
// the stats that count it finished were published (its event is rendered by the output stage,
// one iteration after the abort, while the others keep stepping).
TEST(EngineAbort, FinalEventFollowsTheStatsAmongRunningRequests) {
  Runtime rt(engine_test::runtime_options());
  engine::Engine engine(rt, engine_test::engine_options());
  std::mutex mutex;
  std::condition_variable cv;
  int64_t tokens = 0;
  std::optional<engine::EngineStats> at_finish;
  const uint64_t id = engine.submit(engine_test::greedy(engine_test::make_prompt(9, 40), 4000),
                                    [&](const engine::Event& e) {
                                      std::lock_guard lock(mutex);
                                      tokens += static_cast<int64_t>(e.tokens.size());
                                      if (e.finish) {
                                        at_finish = engine.stats();
                                      }
                                      cv.notify_all();
                                    });
  engine_test::Collector others;
  std::vector<uint64_t> other_ids;
  other_ids.reserve(3);
  for (int i = 0; i < 3; ++i) {
    other_ids.push_back(engine.submit(
        engine_test::greedy(engine_test::make_prompt(20 + i, 40), 4000), others.callback()));
  }
  std::unique_lock lock(mutex);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return tokens >= 3; }));
  lock.unlock();
  engine.abort(id);
  lock.lock();
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return at_finish.has_value(); }));
  EXPECT_EQ(at_finish->finished, 1);
  EXPECT_EQ(at_finish->in_flight, 3);
  lock.unlock();
  for (uint64_t other : other_ids) {
    engine.abort(other);
  }
  others.wait(3);
}

TEST(EngineAbort, WaitingRequestNeverRuns) {
  Runtime rt(engine_test::runtime_options());
  engine::Engine engine(rt, engine_test::engine_options(/*max_running=*/1));
  engine_test::Collector c;
  const uint64_t first =
      engine.submit(engine_test::greedy(engine_test::make_prompt(1, 50), 400), c.callback());
  const uint64_t second =
      engine.submit(engine_test::greedy(engine_test::make_prompt(2, 50), 400), c.callback());
  engine.abort(second);
  engine.abort(987654);  // unknown: ignored
  c.wait(1);
  engine.abort(first);
  c.wait(2);
  const auto s = c.get(second);
  EXPECT_EQ(*s.finish, engine::FinishReason::kAbort);
  EXPECT_TRUE(s.tokens.empty());
  EXPECT_EQ(s.usage.completion_tokens, 0);
  EXPECT_EQ(*c.get(first).finish, engine::FinishReason::kAbort);
  engine.abort(first);  // finished: ignored, no second finish event
  engine.wait_idle();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(c.get(first).events_after_finish, 0);
  const auto stats = engine.stats();
  EXPECT_EQ(stats.main_pages_free, stats.main_pages_total);
}

TEST(EngineAbort, ShutdownAbortsWhatIsInFlight) {
  Runtime rt(engine_test::runtime_options());
  engine_test::Collector c;
  {
    engine::Engine engine(rt, engine_test::engine_options());
    for (int i = 0; i < 4; ++i)
      engine.submit(engine_test::greedy(engine_test::make_prompt(i, 30), 4000), c.callback());
  }  // destroyed while running
  c.wait(4);
  for (uint64_t id = 1; id <= 4; ++id) EXPECT_EQ(*c.get(id).finish, engine::FinishReason::kAbort);
  EXPECT_EQ(rt.pools().main.free_pages(), rt.pools().main.total_pages());
}

}  // namespace
}  // namespace tessera
