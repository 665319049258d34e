// limits.max_queue admission: a request is admitted by what really waits (sequences in flight
// beyond the running slots) plus its own fan-out; a fan-out larger than max_queue is refused as
// invalid (it can never fit), not as busy; a full queue says how many really wait.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "engine_harness.hpp"

namespace tessera {
namespace {

engine::EngineOptions queue_options(int64_t max_running, int64_t max_queue) {
  engine::EngineOptions o = engine_test::engine_options(max_running);
  o.max_queue = max_queue;
  return o;
}

engine::RequestError::Kind refusal_kind(engine::Engine& engine, engine::Request request,
                                        std::string* message = nullptr) {
  try {
    const uint64_t id = engine.submit(std::move(request), [](const engine::Event&) {});
    engine.abort(id);
  } catch (const engine::RequestError& e) {
    if (message != nullptr) *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "expected a refusal";
  return engine::RequestError::Kind::kInvalid;
}

// Two slots, max_queue 4, an idle engine: five single requests at once all fit (two run, three
// wait). The running count was once read from the stats published per step, so a burst between
// two steps counted every request as waiting and the fifth got a 429.
TEST(EngineAdmission, BurstOnAnIdleEngineIsAdmittedWhileSlotsAreFree) {
  Runtime rt(engine_test::runtime_options());
  engine::Engine engine(rt, queue_options(/*max_running=*/2, /*max_queue=*/4));
  std::vector<uint64_t> ids;
  for (int i = 0; i < 5; ++i) {
    ASSERT_NO_THROW(ids.push_back(engine.submit(
        engine_test::greedy(engine_test::make_prompt(static_cast<uint64_t>(i), 8), 4000),
        [](const engine::Event&) {})))
        << "request " << i;
  }
  // Now 5 in flight on 2 slots: 3 wait; one more fits, a second does not.
  ids.push_back(engine.submit(engine_test::greedy(engine_test::make_prompt(7, 8), 4000),
                              [](const engine::Event&) {}));
  std::string message;
  EXPECT_EQ(refusal_kind(engine, engine_test::greedy(engine_test::make_prompt(8, 8), 8), &message),
            engine::RequestError::Kind::kBusy);
  EXPECT_NE(message.find("4 sequences are waiting"), std::string::npos) << message;
  for (const uint64_t id : ids) engine.abort(id);
  engine.wait_idle();
}

// A request's choices are admitted whole, by the first of them: n = 4 fits max_queue = 4 on an
// idle engine, n = 5 never can and is invalid rather than busy.
TEST(EngineAdmission, FanOutCountsWholeAndTooLargeIsInvalid) {
  Runtime rt(engine_test::runtime_options());
  engine::Engine engine(rt, queue_options(/*max_running=*/2, /*max_queue=*/4));
  engine::Request five = engine_test::greedy(engine_test::make_prompt(1, 8), 8);
  five.queue_fan_out = 5;
  std::string message;
  EXPECT_EQ(refusal_kind(engine, five, &message), engine::RequestError::Kind::kInvalid);
  EXPECT_NE(message.find("can never be admitted"), std::string::npos) << message;

  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i) {
    engine::Request choice = engine_test::greedy(engine_test::make_prompt(2, 8), 4000);
    choice.queue_fan_out = i == 0 ? 4 : 0;
    ASSERT_NO_THROW(ids.push_back(engine.submit(choice, [](const engine::Event&) {})))
        << "choice " << i;
  }
  // 4 in flight on 2 slots: 2 wait; a request of 3 more would make 5 waiting.
  engine::Request three = engine_test::greedy(engine_test::make_prompt(3, 8), 8);
  three.queue_fan_out = 3;
  EXPECT_EQ(refusal_kind(engine, three), engine::RequestError::Kind::kBusy);
  for (const uint64_t id : ids) engine.abort(id);
  engine.wait_idle();
}

}  // namespace
}  // namespace tessera
