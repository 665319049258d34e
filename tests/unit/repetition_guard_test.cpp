// The repetition guard on a labelled corpus (tests/data/repetition/cases.jsonl, made by
// tools/fixtures/repetition/make_cases.py): each text is tokenized with the fixture tokenizer and
// streamed through the guard token by token. Precision and recall are printed, asserted against
// the values stated in docs/generation.md, and the guard's basic rules are checked directly.
#include "generation/repetition_guard.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.hpp"

namespace tessera::generation {
namespace {

const std::string kRoot = TESSERA_SOURCE_DIR;

std::function<std::string_view(int32_t)> text_of(const tokenizer::Tokenizer& tok) {
  return [&tok](int32_t id) { return tok.token_bytes(id); };
}

// Test tokens: id 1 is a space, every other id one visible character.
std::string_view fake_text(int32_t id) { return id == 1 ? " " : "x"; }

TEST(RepetitionGuard, LabelledCorpusPrecisionAndRecall) {
  const auto tok = tokenizer::Tokenizer::from_file(kRoot + "/tests/data/tokenizer/tokenizer.json");
  std::ifstream in(kRoot + "/tests/data/repetition/cases.jsonl");
  ASSERT_TRUE(in) << "missing corpus";
  int tp = 0, fp = 0, fn = 0, tn = 0;
  std::string line;
  while (std::getline(in, line)) {
    const auto c = nlohmann::json::parse(line);
    RepetitionGuard guard({}, text_of(tok));
    bool fired = false;
    for (int32_t id : tok.encode(c.at("text").get<std::string>()))
      if (guard.push(id)) {
        fired = true;
        break;
      }
    const bool loop = c.at("label") == "loop";
    if (fired && loop) ++tp;
    if (fired && !loop) {
      ++fp;
      ADD_FAILURE() << "false positive: " << c.at("name");
    }
    if (!fired && loop) {
      ++fn;
      ADD_FAILURE() << "missed loop: " << c.at("name");
    }
    if (!fired && !loop) ++tn;
  }
  const double precision = tp / double(tp + fp), recall = tp / double(tp + fn);
  std::printf("repetition guard: %d cases, TP %d FP %d FN %d TN %d, precision %.3f recall %.3f\n",
              tp + fp + fn + tn, tp, fp, fn, tn, precision, recall);
  EXPECT_GE(tp + fp + fn + tn, 100);
  EXPECT_GE(precision, 1.0);  // docs/generation.md states the measured values
  EXPECT_GE(recall, 1.0);
}

TEST(RepetitionGuard, ShortUnitsNeedLongRuns) {
  RepetitionGuard guard({4, 16, 32, 1000}, fake_text);
  for (int i = 0; i < 31; ++i) EXPECT_FALSE(guard.push(7)) << i;
  const auto hit = guard.push(7);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->ngram, 1);
  EXPECT_EQ(hit->repeats, 32);
}

TEST(RepetitionGuard, LongTokensJudgedByTheTextTheyCover) {
  // one 16-character token: 4 copies cover 64 characters
  RepetitionGuard guard({4, 16, 1000, 64},
                        [](int32_t) { return std::string_view("****************"); });
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(guard.push(5));
  EXPECT_TRUE(guard.push(5));
}

TEST(RepetitionGuard, WhitespaceOnlyUnitsNeverFire) {
  RepetitionGuard guard({}, fake_text);
  for (int i = 0; i < 500; ++i) EXPECT_FALSE(guard.push(1));
}

TEST(RepetitionGuard, PhraseLoopFiresAfterRequiredCopies) {
  RepetitionGuard guard({4, 16, 32, 1000}, fake_text);
  const std::vector<int32_t> phrase = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19};  // n = 10
  int64_t pushed = 0;
  std::optional<RepetitionHit> hit;
  while (!hit && pushed < 1000) {
    hit = guard.push(phrase[pushed % phrase.size()]);
    ++pushed;
  }
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->ngram, 10);
  EXPECT_EQ(pushed, 40);  // max(4, ceil(32/10)) = 4 copies
}

}  // namespace
}  // namespace tessera::generation
