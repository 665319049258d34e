// Stops: the stop-string matcher on its own (matches across pieces, holds back possible
// beginnings, never leaks), then through the engine: EOS, stop token ids, stop strings spelled
// across token boundaries, max_tokens, the context limit and over-long prompts.
#include <gtest/gtest.h>

#include "engine/stop_matcher.hpp"
#include "engine_harness.hpp"

namespace tessera {
namespace {

using engine::StopMatcher;
using engine_test::Output;

// Feeds pieces; returns (emitted text, matched stop index or -1).
std::pair<std::string, int> feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) {
    const auto r = m.push(p);
    out += r.text;
    if (r.matched) return {out, static_cast<int>(*r.matched)};
  }
  out += m.flush();
  return {out, -1};
}

TEST(StopMatcher, MatchesAcrossPiecesAndNeverLeaks) {
  StopMatcher m({"STOP"});
  std::string emitted;
  auto r = m.push("abc S");
  emitted += r.text;
  EXPECT_EQ(r.text, "abc ");  // "S" may begin the stop string: held
  r = m.push("TO");
  emitted += r.text;
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(m.held_bytes(), 3u);
  r = m.push("Px");
  emitted += r.text;
  ASSERT_TRUE(r.matched);
  EXPECT_EQ(emitted, "abc ");
}

TEST(StopMatcher, ReleasesHeldTextWhenItCannotMatch) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(feed(m, {"ST", "OX", "yz"}), std::make_pair(std::string("STOXyz"), -1));
  StopMatcher tail({"STOP"});
  EXPECT_EQ(feed(tail, {"a", "STO"}), std::make_pair(std::string("aSTO"), -1));  // flushed at end
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  StopMatcher m({"world", "lo w"});
  EXPECT_EQ(feed(m, {"hel", "lo wor", "ld"}), std::make_pair(std::string("hel"), 1));
  StopMatcher overlap({"aab"});
  EXPECT_EQ(feed(overlap, {"a", "a", "a", "b"}), std::make_pair(std::string("a"), 0));
}

TEST(StopMatcher, MultibyteStopStrings) {
  StopMatcher m({"\xE2\x82\xAC!"});  // "€!"
  EXPECT_EQ(feed(m, {"5 \xE2\x82\xAC", "!"}), std::make_pair(std::string("5 "), 0));
}

class EngineStops : public ::testing::Test {
 protected:
  EngineStops() : rt_(engine_test::runtime_options()) {}
  engine::Engine make(engine::EngineOptions o = engine_test::engine_options()) {
    return engine::Engine(rt_, o, &engine_test::test_tokenizer());
  }
  Runtime rt_;
};

TEST_F(EngineStops, StopTokenIdEndsWithTheTokenAndReason) {
  auto e = make();
  const auto prompt = engine_test::make_prompt(3, 30);
  const auto free_run = engine_test::run_all(e, {engine_test::greedy(prompt, 20)})[0];
  ASSERT_EQ(free_run.tokens.size(), 20u);
  const int32_t stop_id = free_run.tokens[7];
  const auto first = std::find(free_run.tokens.begin(), free_run.tokens.end(), stop_id);
  auto r = engine_test::greedy(prompt, 20);
  r.stop_token_ids = {stop_id};
  const auto out = engine_test::run_all(e, {r})[0];
  const std::vector<int32_t> expected(free_run.tokens.begin(), first + 1);
  EXPECT_EQ(out.tokens, expected);
  EXPECT_EQ(*out.finish, engine::FinishReason::kStop);
  EXPECT_EQ(out.stop_token, stop_id);
  EXPECT_EQ(out.usage.completion_tokens, static_cast<int64_t>(expected.size()));
}

TEST_F(EngineStops, EosStopsUnlessIgnored) {
  auto e = make();
  // Find prompts whose free-running greedy output contains EOS (id 1 in tiny-a): 64 prompts of
  // 40 tokens give ~2500 draws over a 512-token vocabulary.
  std::vector<engine::Request> probes;
  for (uint64_t seed = 0; seed < 64; ++seed)
    probes.push_back(engine_test::greedy(engine_test::make_prompt(1000 + seed, 12), 40));
  const auto free_runs = engine_test::run_all(e, probes);
  int checked = 0;
  for (size_t i = 0; i < probes.size() && checked < 2; ++i) {
    const auto& t = free_runs[i].tokens;
    const auto eos = std::find(t.begin(), t.end(), 1);
    if (eos == t.end()) continue;
    auto r = probes[i];
    r.ignore_eos = false;
    const auto out = engine_test::run_all(e, {r})[0];
    EXPECT_EQ(out.tokens, std::vector<int32_t>(t.begin(), eos + 1));
    EXPECT_EQ(*out.finish, engine::FinishReason::kStop);
    EXPECT_EQ(out.stop_token, 1);
    ++checked;
  }
  EXPECT_GE(checked, 1) << "no probe produced EOS";
}

TEST_F(EngineStops, StopStringAcrossTokenBoundaryIsNeverLeaked) {
  auto e = make();
  const auto& tok = engine_test::test_tokenizer();
  int tested = 0;
  for (uint64_t seed = 10; seed < 60 && tested < 3; ++seed) {
    const auto prompt = engine_test::make_prompt(seed, 20);
    const auto free_run = engine_test::run_all(e, {engine_test::greedy(prompt, 24)})[0];
    // Find two consecutive tokens, each at least two bytes of plain ASCII text.
    for (size_t i = 4; i + 1 < free_run.tokens.size(); ++i) {
      const std::string a(tok.token_bytes(free_run.tokens[i]));
      const std::string b(tok.token_bytes(free_run.tokens[i + 1]));
      auto ascii = [](const std::string& s) {
        return s.size() >= 2 &&
               std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x21 && c < 0x7f; });
      };
      if (!ascii(a) || !ascii(b)) continue;
      const std::string stop = a.substr(a.size() - 1) + b.substr(0, 1);  // spans the boundary
      const size_t at = free_run.text.find(stop);
      ASSERT_NE(at, std::string::npos);
      auto r = engine_test::greedy(prompt, 24);
      r.stop = {stop};
      Output out;
      {
        engine_test::Collector c;
        std::vector<std::string> pieces;
        const uint64_t id = e.submit(r, [&](const engine::Event& ev) {
          pieces.push_back(ev.text);
          c.callback()(ev);
        });
        c.wait(1);
        out = c.get(id);
        for (const auto& p : pieces) EXPECT_EQ(p.find(stop), std::string::npos);
      }
      EXPECT_EQ(out.text, free_run.text.substr(0, at)) << "stop `" << stop << "`";
      EXPECT_EQ(out.text.find(stop), std::string::npos);
      EXPECT_EQ(*out.finish, engine::FinishReason::kStop);
      EXPECT_EQ(out.stop_string, stop);
      ++tested;
      break;
    }
  }
  EXPECT_GE(tested, 1) << "no prompt produced two consecutive ASCII tokens";
}

// Stops are per sequence: 24 requests in the same steps, each with its own stop string (or none),
// give every request the text, tokens and finish it gets alone (one at a time).
TEST_F(EngineStops, ManySequencesStopAsEachDoesAlone) {
  auto e = make();
  std::vector<engine::Request> requests;
  int with_stop = 0;
  for (uint64_t seed = 100; seed < 124; ++seed) {
    auto r = engine_test::greedy(engine_test::make_prompt(seed, 12), 20);
    const auto free_run = engine_test::run_all(e, {r})[0];
    if (free_run.text.size() >= 12 && seed % 4 != 0) {  // every fourth runs to its length
      r.stop = {free_run.text.substr(free_run.text.size() / 2, 2)};
      ++with_stop;
    }
    requests.push_back(r);
  }
  ASSERT_GE(with_stop, 8) << "too few outputs long enough to cut";
  std::vector<engine_test::Output> alone;
  for (const auto& r : requests) alone.push_back(engine_test::run_all(e, {r})[0]);
  const auto together = engine_test::run_all(e, requests);
  int stopped = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    EXPECT_EQ(together[i].tokens, alone[i].tokens);
    EXPECT_EQ(together[i].text, alone[i].text);
    ASSERT_TRUE(together[i].finish.has_value());
    EXPECT_EQ(*together[i].finish, *alone[i].finish);
    EXPECT_EQ(together[i].stop_string, alone[i].stop_string);
    EXPECT_EQ(together[i].events_after_finish, 0);
    if (together[i].stop_string) {
      EXPECT_EQ(together[i].text.find(*together[i].stop_string), std::string::npos);
      ++stopped;
    }
  }
  EXPECT_GE(stopped, 8) << "the stop strings were not matched in the batch";
}

// The output stage finds stop strings one step after the loop decided the token (output_stage.hpp):
// the sequence must still end at the token whose text completes the stop string, never one later,
// and its usage must count exactly the tokens delivered. 16 requests share the steps, on one
// compute thread (the stage renders on the loop) and on two (it renders on the helper while the
// next forward runs). The expected end is found by decoding the free run's tokens.
TEST_F(EngineStops, StopStringEndsAtTheTokenThatCompletesIt) {
  const auto& tok = engine_test::test_tokenizer();
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    engine::EngineOptions o = engine_test::engine_options();
    o.threads = threads;
    auto e = make(o);
    std::vector<engine::Request> requests;
    std::vector<std::vector<int32_t>> expected;
    for (uint64_t seed = 200; seed < 240 && requests.size() < 16; ++seed) {
      auto r = engine_test::greedy(engine_test::make_prompt(seed, 10), 24);
      const auto free_run = engine_test::run_all(e, {r})[0];
      // Three printable ASCII characters from the second half of the text.
      const std::string& text = free_run.text;
      std::string stop;
      for (size_t at = text.size() / 2; at + 3 <= text.size() && stop.empty(); ++at) {
        const std::string cut = text.substr(at, 3);
        if (std::all_of(cut.begin(), cut.end(), [](char c) { return c > 0x20 && c < 0x7f; })) {
          stop = cut;
        }
      }
      if (stop.empty()) {
        continue;
      }
      // The first k tokens whose text (HF-style decode) holds it.
      size_t k = 1;
      while (tok.decode(std::span(free_run.tokens).first(k)).find(stop) == std::string::npos) {
        ++k;
      }
      r.stop = {stop};
      requests.push_back(r);
      expected.emplace_back(free_run.tokens.begin(), free_run.tokens.begin() + k);
    }
    ASSERT_GE(requests.size(), 8u) << "too few plain-ASCII outputs";
    const auto out = engine_test::run_all(e, requests);
    for (size_t i = 0; i < requests.size(); ++i) {
      SCOPED_TRACE("request " + std::to_string(i) + ", stop `" + requests[i].stop[0] + "`");
      EXPECT_EQ(out[i].tokens, expected[i]);
      EXPECT_EQ(out[i].usage.completion_tokens, static_cast<int64_t>(out[i].tokens.size()));
      ASSERT_TRUE(out[i].finish.has_value());
      EXPECT_EQ(*out[i].finish, engine::FinishReason::kStop);
      EXPECT_EQ(out[i].stop_string, requests[i].stop[0]);
      EXPECT_EQ(out[i].events_after_finish, 0);
    }
    const engine::EngineStats stats = e.stats();
    EXPECT_EQ(stats.main_pages_free, stats.main_pages_total);
  }
}

TEST_F(EngineStops, MaxTokensAndContextLimit) {
  engine::EngineOptions o = engine_test::engine_options();
  o.max_context = 64;
  auto e = make(o);
  const auto short_out =
      engine_test::run_all(e, {engine_test::greedy(engine_test::make_prompt(5, 20), 9)})[0];
  EXPECT_EQ(short_out.tokens.size(), 9u);
  EXPECT_EQ(*short_out.finish, engine::FinishReason::kLength);
  // 50 prompt tokens + at most 14 more under a 64-token context.
  const auto long_out =
      engine_test::run_all(e, {engine_test::greedy(engine_test::make_prompt(6, 50), 100)})[0];
  EXPECT_EQ(long_out.tokens.size(), 14u);
  EXPECT_EQ(*long_out.finish, engine::FinishReason::kLength);
}

TEST_F(EngineStops, OverLongPromptIsRefusedBeforeAnyAllocation) {
  engine::EngineOptions o = engine_test::engine_options();
  o.max_context = 64;
  auto e = make(o);
  const auto before = e.stats();
  try {
    e.submit(engine_test::greedy(engine_test::make_prompt(7, 64), 4),
             [](const engine::Event&) { ADD_FAILURE() << "event for a refused request"; });
    FAIL() << "accepted a 64-token prompt under a 64-token context";
  } catch (const engine::RequestError& err) {
    EXPECT_EQ(err.kind(), engine::RequestError::Kind::kTooLong);
    EXPECT_NE(std::string(err.what()).find("64"), std::string::npos) << err.what();
  }
  const auto after = e.stats();
  EXPECT_EQ(after.in_flight, 0);
  EXPECT_EQ(after.main_pages_free, before.main_pages_free);
  EXPECT_EQ(after.steps, before.steps);
}

}  // namespace
}  // namespace tessera
