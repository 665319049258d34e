// Generation that does not degenerate, in the serving engine, on the shipped tiny model: greedy
// loops end with finish_reason "repetition" (or are only counted in "warn" mode), and a thinking
// request with a reasoning budget gets </think> from the engine so the answer has room.
#include <gtest/gtest.h>

#include <algorithm>

#include "chat/chat_encoder.hpp"
#include "engine_harness.hpp"

namespace tessera {
namespace {

const std::filesystem::path kModel = std::filesystem::path(TESSERA_SOURCE_DIR) / "models/tiny-dsv4";

struct ShippedEngine {
  Runtime runtime;
  tokenizer::Tokenizer tok;
  engine::Engine engine;
  static RuntimeOptions options() {
    RuntimeOptions o;
    o.model_dir = kModel;
    o.plugin_dirs = {TESSERA_PLUGIN_DIR};
    o.memory_gib = 0.1;
    o.max_context = 2048;
    return o;
  }
  explicit ShippedEngine(engine::EngineOptions eo)
      : runtime(options()),
        tok(tokenizer::Tokenizer::from_file(kModel / "tokenizer.json")),
        engine(runtime, eo, &tok) {}
};

engine::EngineOptions guard_options(const std::string& mode) {
  engine::EngineOptions o = engine_test::engine_options();
  o.max_tokens_limit = 1024;
  o.repetition_mode = mode;
  return o;
}

TEST(EngineGenerationGuard, GreedyLoopFinishesWithRepetition) {
  ShippedEngine e(guard_options("stop"));
  auto req = engine_test::greedy(e.tok.encode("Apple (n.)"), 600);
  req.ignore_eos = false;
  const auto out = engine_test::run_all(e.engine, {req});
  ASSERT_TRUE(out[0].finish);
  EXPECT_EQ(engine::finish_reason_name(*out[0].finish), std::string("repetition"));
  EXPECT_GE(out[0].usage.repetition_hits, 1);
  EXPECT_LT(out[0].tokens.size(), 600u);
  EXPECT_EQ(out[0].usage.completion_tokens, static_cast<int64_t>(out[0].tokens.size()));
}

// The guard runs in the output stage, a step after the loop decided the token: a "stop" request
// must still end at the very token where a guard fed the same tokens first fires. The same
// request in "warn" mode runs on (same greedy tokens); a guard built here over its tokens says
// where the stop belongs.
TEST(EngineGenerationGuard, RepetitionStopEndsAtTheFirstHit) {
  const engine::EngineOptions eo = guard_options("off");
  ShippedEngine e(eo);
  auto stop = engine_test::greedy(e.tok.encode("Apple (n.)"), 600);
  stop.ignore_eos = false;
  stop.repetition_guard = "stop";
  auto warn = stop;
  warn.repetition_guard = "warn";
  const auto out = engine_test::run_all(e.engine, {stop, warn});
  ASSERT_TRUE(out[0].finish && out[1].finish);
  ASSERT_EQ(*out[0].finish, engine::FinishReason::kRepetition);
  generation::RepetitionGuard guard(eo.repetition,
                                    [&](int32_t id) { return e.tok.token_bytes(id); });
  size_t first_hit = 0;
  while (first_hit < out[1].tokens.size() && !guard.push(out[1].tokens[first_hit])) {
    ++first_hit;
  }
  ASSERT_LT(first_hit, out[1].tokens.size()) << "the warn run never repeats";
  const std::vector<int32_t> expected(out[1].tokens.begin(),
                                      out[1].tokens.begin() + static_cast<int64_t>(first_hit) + 1);
  EXPECT_EQ(out[0].tokens, expected);
  EXPECT_EQ(out[0].usage.completion_tokens, static_cast<int64_t>(expected.size()));
  EXPECT_EQ(out[0].usage.repetition_hits, 1);
  EXPECT_EQ(out[0].events_after_finish, 0);
}

TEST(EngineGenerationGuard, WarnModeOnlyCounts) {
  ShippedEngine e(guard_options("warn"));
  auto req = engine_test::greedy(e.tok.encode("Apple (n.)"), 300);
  req.ignore_eos = false;
  auto per_request_off = req;
  per_request_off.repetition_guard = "off";
  const auto out = engine_test::run_all(e.engine, {req, per_request_off});
  ASSERT_TRUE(out[0].finish && out[1].finish);
  EXPECT_NE(*out[0].finish, engine::FinishReason::kRepetition);
  EXPECT_GT(out[0].usage.repetition_hits, 0);
  EXPECT_EQ(out[1].usage.repetition_hits, 0);
}

TEST(EngineGenerationGuard, ReasoningBudgetClosesThinking) {
  engine::EngineOptions eo = guard_options("off");
  ShippedEngine e(eo);
  chat::EncodeOptions chat_options;
  chat_options.thinking_mode = chat::ThinkingMode::kThinking;
  const std::string prompt = chat::encode_messages(
      chat::Json::array({chat::Json{{"role", "user"}, {"content", "What is 20 - 6?"}}}),
      chat_options);
  const int32_t think_end = *e.tok.token_to_id("</think>");
  std::vector<engine::Request> requests;
  for (int64_t budget : {3, 6}) {
    engine::Request r = engine_test::sampled(e.tok.encode(prompt), 40, 11);
    r.ignore_eos = true;
    r.max_reasoning_tokens = budget;
    requests.push_back(r);
  }
  const auto out = engine_test::run_all(e.engine, requests);
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& tokens = out[i].tokens;
    const auto end = std::find(tokens.begin(), tokens.end(), think_end);
    ASSERT_NE(end, tokens.end()) << "no </think> in request " << i;
    const auto position = end - tokens.begin();
    EXPECT_LE(position, requests[i].max_reasoning_tokens.value());
    EXPECT_EQ(out[i].usage.reasoning_tokens, position);
    EXPECT_GT(static_cast<int64_t>(tokens.size()), position + 1) << "no answer after </think>";
  }
}

}  // namespace
}  // namespace tessera
