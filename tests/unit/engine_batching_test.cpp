// The engine loop with continuous batching: one request equals the model driven by hand, many
// requests batched together (chunked prefill mixed into decode steps) equal each run alone, and
// the stream's invariants hold (one finish event, usage counts).
#include <gtest/gtest.h>

#include <algorithm>

#include "engine_harness.hpp"

namespace tessera {
namespace {

using engine_test::Output;

// Greedy decoding by hand: one prefill forward, then one forward per token.
std::vector<int32_t> greedy_by_hand(Runtime& rt, const std::vector<int32_t>& prompt, int64_t n) {
  auto seq = rt.new_sequence();
  std::vector<int32_t> out;
  dsv4::ForwardBatch prefill;
  prefill.chunks.push_back({seq.get(), prompt, false});
  dsv4::Logits logits = rt.model().forward(prefill);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits.row(0);
    out.push_back(static_cast<int32_t>(std::max_element(row, row + logits.vocab) - row));
    dsv4::ForwardBatch step;
    step.chunks.push_back({seq.get(), std::span<const int32_t>(&out.back(), 1), false});
    logits = rt.model().forward(step);
  }
  return out;
}

TEST(EngineBatching, OneGreedyRequestEqualsTheModelByHand) {
  Runtime rt(engine_test::runtime_options());
  const auto prompt = engine_test::make_prompt(1, 40);
  const auto expected = greedy_by_hand(rt, prompt, 24);
  engine::Engine engine(rt, engine_test::engine_options());
  const auto out = engine_test::run_all(engine, {engine_test::greedy(prompt, 24)});
  EXPECT_EQ(out[0].tokens, expected);
  ASSERT_TRUE(out[0].finish);
  EXPECT_EQ(*out[0].finish, engine::FinishReason::kLength);
  EXPECT_EQ(out[0].usage.prompt_tokens, 40);
  EXPECT_EQ(out[0].usage.completion_tokens, 24);
  EXPECT_EQ(out[0].events_after_finish, 0);
}

TEST(EngineBatching, BatchedRequestsEqualEachRunAlone) {
  std::vector<engine::Request> requests;
  for (int i = 0; i < 12; ++i) {
    auto prompt = engine_test::make_prompt(100 + i, 10 + 23 * i);  // 10 .. 263 tokens
    requests.push_back(i % 2 == 0 ? engine_test::greedy(prompt, 12 + i)
                                  : engine_test::sampled(prompt, 12 + i, 7 + i));
  }
  std::vector<Output> alone;
  {
    Runtime rt(engine_test::runtime_options());
    engine::Engine engine(rt, engine_test::engine_options(1, 4096, 4096));
    for (const auto& r : requests) alone.push_back(engine_test::run_all(engine, {r})[0]);
  }
  Runtime rt(engine_test::runtime_options());
  // A small token budget and chunk: long prompts are prefilled in pieces while others decode.
  engine::Engine engine(rt, engine_test::engine_options(8, 48, 32));
  const auto batched = engine_test::run_all(engine, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(batched[i].tokens, alone[i].tokens) << "request " << i;
    EXPECT_EQ(batched[i].usage.completion_tokens, static_cast<int64_t>(alone[i].tokens.size()));
  }
  const engine::EngineStats s = engine.stats();
  int64_t prompt_tokens = 0, output_tokens = 0;
  for (const auto& r : requests) prompt_tokens += static_cast<int64_t>(r.prompt.size());
  for (const auto& o : batched) output_tokens += static_cast<int64_t>(o.tokens.size());
  EXPECT_EQ(s.prefill_tokens, prompt_tokens);
  EXPECT_EQ(s.generated_tokens, output_tokens);
  // Batching pays: far fewer steps than tokens, and no step above the token budget.
  EXPECT_LT(s.steps, (prompt_tokens + output_tokens) / 4);
  EXPECT_LE(s.batched_tokens, s.steps * 48);
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.main_pages_free, s.main_pages_total);
}

TEST(EngineBatching, RequestsSubmittedFromManyThreads) {
  Runtime rt(engine_test::runtime_options());
  engine::Engine engine(rt, engine_test::engine_options(16, 256, 64));
  engine_test::Collector c;
  std::vector<std::thread> threads;
  std::mutex ids_mutex;
  std::vector<uint64_t> ids;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        const uint64_t id = engine.submit(
            engine_test::greedy(engine_test::make_prompt(t * 10 + i, 8 + i), 6), c.callback());
        std::lock_guard lock(ids_mutex);
        ids.push_back(id);
      }
    });
  }
  for (auto& t : threads) t.join();
  c.wait(20);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end());
  for (uint64_t id : ids) {
    const Output o = c.get(id);
    EXPECT_EQ(o.tokens.size(), 6u);
    EXPECT_EQ(o.events_after_finish, 0);
  }
}

TEST(EngineBatching, InvalidRequestsAreRefusedBeforeQueueing) {
  Runtime rt(engine_test::runtime_options());
  engine::Engine engine(rt, engine_test::engine_options());
  auto refused = [&](engine::Request r, engine::RequestError::Kind kind) {
    try {
      engine.submit(std::move(r), [](const engine::Event&) { FAIL() << "no event expected"; });
      ADD_FAILURE() << "request accepted";
    } catch (const engine::RequestError& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
    }
  };
  using K = engine::RequestError::Kind;
  refused(engine_test::greedy({}, 4), K::kInvalid);
  refused(engine_test::greedy({5, 512}, 4), K::kInvalid);   // outside the vocabulary
  refused(engine_test::greedy({5, 6}, 0), K::kInvalid);     // max_tokens < 1
  refused(engine_test::greedy({5, 6}, 5000), K::kInvalid);  // above limits.max_tokens
  auto stop = engine_test::greedy({5, 6}, 4);
  stop.stop = {"x"};  // no tokenizer given to this engine
  refused(stop, K::kInvalid);
  auto logprobs = engine_test::greedy({5, 6}, 4);
  logprobs.top_logprobs = 21;
  refused(logprobs, K::kInvalid);
  EXPECT_EQ(engine.stats().in_flight, 0);
}

}  // namespace
}  // namespace tessera
