// The "standard" sampler refuses bad input with the right status and a message naming the row
// and the value; a failing row gets token -1 and never disturbs the other rows.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "sampler_harness.hpp"

namespace tessera::sampler_test {
namespace {

const std::vector<float> kLogits = {0.1f, 1.0f, -0.5f, 2.0f, 0.0f, 0.7f, -1.0f, 0.3f, 1.1f, 0.2f};

// Samples a batch of 4 good rows where row `bad` is replaced by `mutate(row)`; checks the status
// code, that the message names the row and contains `needle`, and that only that row failed.
void expect_row_error(const std::function<void(ts_sampler_row&)>& mutate, ts_status_code code,
                      const std::string& needle, std::vector<float> logits = kLogits) {
  const PluginInstance sampler = make_sampler(2);
  constexpr int kBad = 2;
  std::vector<ts_sampler_row> rows;
  for (uint64_t i = 0; i < 4; ++i) rows.push_back(make_row(kLogits, plain_params(i), i));
  rows[kBad].logits = logits.data();
  mutate(rows[kBad]);
  ResultBuffers out(rows.size(), 2);
  const ts_status s = call_sample(sampler, rows, static_cast<int32_t>(kLogits.size()), out.results);
  ASSERT_EQ(s.code, code) << needle << ": " << (s.message ? s.message : "(null)");
  ASSERT_NE(s.message, nullptr);
  const std::string message = s.message;
  EXPECT_NE(message.find("row 2"), std::string::npos) << message;
  EXPECT_NE(message.find(needle), std::string::npos) << message;
  for (int i = 0; i < 4; ++i) {
    if (i == kBad) {
      EXPECT_EQ(out.results[i].token, -1) << message;
    } else {
      EXPECT_GE(out.results[i].token, 0) << "row " << i << " must still be sampled";
    }
  }
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(SamplerErrors, NonFiniteLogitsAreNumericErrors) {
  const std::vector<std::pair<float, std::string>> cases = {
      {kNaN, "logits[7] = nan"}, {kInf, "logits[7] = inf"}, {-kInf, "logits[7] = -inf"}};
  for (const auto& [bad, needle] : cases) {
    std::vector<float> logits = kLogits;
    logits[7] = bad;
    expect_row_error([](ts_sampler_row&) {}, TS_ERR_NUMERIC, needle, logits);
  }
  // Greedy rows are checked too: a NaN must never become a token.
  std::vector<float> logits = kLogits;
  logits[0] = kNaN;
  expect_row_error([](ts_sampler_row& r) { r.params.temperature = 0.0f; }, TS_ERR_NUMERIC,
                   "logits[0] = nan", logits);
}

struct BadParam {
  const char* needle;
  std::function<void(ts_sampling_params&)> mutate;
};

TEST(SamplerErrors, InvalidParametersAreInvalidArguments) {
  const std::vector<BadParam> cases = {
      {"temperature = -0.5", [](auto& p) { p.temperature = -0.5f; }},
      {"temperature = nan", [](auto& p) { p.temperature = kNaN; }},
      {"temperature = inf", [](auto& p) { p.temperature = kInf; }},
      {"top_k = -1", [](auto& p) { p.top_k = -1; }},
      {"top_p = 0", [](auto& p) { p.top_p = 0.0f; }},
      {"top_p = 1.5", [](auto& p) { p.top_p = 1.5f; }},
      {"top_p = nan", [](auto& p) { p.top_p = kNaN; }},
      {"top_p = -0.25", [](auto& p) { p.top_p = -0.25f; }},
      {"min_p = -0.125", [](auto& p) { p.min_p = -0.125f; }},
      {"min_p = 1.5", [](auto& p) { p.min_p = 1.5f; }},
      {"min_p = nan", [](auto& p) { p.min_p = kNaN; }},
      {"repetition_penalty = 0", [](auto& p) { p.repetition_penalty = 0.0f; }},
      {"repetition_penalty = -1", [](auto& p) { p.repetition_penalty = -1.0f; }},
      {"repetition_penalty = nan", [](auto& p) { p.repetition_penalty = kNaN; }},
      {"repetition_penalty = inf", [](auto& p) { p.repetition_penalty = kInf; }},
      {"frequency_penalty = 3", [](auto& p) { p.frequency_penalty = 3.0f; }},
      {"frequency_penalty = nan", [](auto& p) { p.frequency_penalty = kNaN; }},
      {"presence_penalty = -2.5", [](auto& p) { p.presence_penalty = -2.5f; }},
      {"logprobs = -1", [](auto& p) { p.logprobs = -1; }},
      {"top_logprobs = -2", [](auto& p) { p.top_logprobs = -2; }},
      {"top_logprobs = 3", [](auto& p) { p.top_logprobs = 3; }},  // capacity is 2
  };
  for (const BadParam& c : cases) {
    SCOPED_TRACE(c.needle);
    expect_row_error([&](ts_sampler_row& r) { c.mutate(r.params); }, TS_ERR_INVALID_ARGUMENT,
                     c.needle);
  }
}

// Ids a penalty reads are checked: each penalty alone finds the bad id in either list.
TEST(SamplerErrors, InvalidTokenListsAndPointers) {
  static const std::vector<int32_t> out_of_range = {3, 10};
  static const std::vector<int32_t> negative = {-1};
  const std::vector<std::function<void(ts_sampling_params&)>> penalties = {
      [](auto& p) { p.repetition_penalty = 1.2f; },
      [](auto& p) { p.frequency_penalty = 0.5f; },
      [](auto& p) { p.presence_penalty = -0.5f; },
  };
  // The row's prompt list (prompt = true) or output list set to `ids`.
  const auto with_list = [](bool prompt, const std::vector<int32_t>& ids, ts_sampler_row& r) {
    (prompt ? r.prompt_tokens : r.output_tokens) = ids.data();
    (prompt ? r.n_prompt_tokens : r.n_output_tokens) = static_cast<int64_t>(ids.size());
  };
  for (size_t i = 0; i < penalties.size(); ++i) {
    SCOPED_TRACE("penalty " + std::to_string(i));
    for (const bool prompt : {true, false}) {
      const std::vector<int32_t>& ids = prompt ? out_of_range : negative;
      expect_row_error(
          [&](ts_sampler_row& r) {
            penalties[i](r.params);
            with_list(prompt, ids, r);
          },
          TS_ERR_INVALID_ARGUMENT, prompt ? "prompt_tokens[1] = 10" : "output_tokens[0] = -1");
    }
  }
  expect_row_error([](ts_sampler_row& r) { r.n_output_tokens = 3; }, TS_ERR_INVALID_ARGUMENT,
                   "output_tokens is NULL");
  expect_row_error([](ts_sampler_row& r) { r.n_prompt_tokens = -4; }, TS_ERR_INVALID_ARGUMENT,
                   "n_prompt_tokens = -4");
  expect_row_error([](ts_sampler_row& r) { r.logits = nullptr; }, TS_ERR_INVALID_ARGUMENT,
                   "logits is NULL");
}

// Without a penalty nothing reads the lists' ids (docs/sampler.md "Errors"): a row whose lists hold
// ids outside the vocabulary samples the token the same row gives with clean lists.
TEST(SamplerErrors, UnreadTokenIdsAreNotChecked) {
  static const std::vector<int32_t> prompt = {3, 10};
  static const std::vector<int32_t> output = {-1, 4};
  const PluginInstance sampler = make_sampler(2);
  for (uint64_t seed = 0; seed < 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<ts_sampler_row> rows = {make_row(kLogits, plain_params(seed), seed),
                                        make_row(kLogits, plain_params(seed), seed)};
    rows[1].prompt_tokens = prompt.data();
    rows[1].n_prompt_tokens = static_cast<int64_t>(prompt.size());
    rows[1].output_tokens = output.data();
    rows[1].n_output_tokens = static_cast<int64_t>(output.size());
    ResultBuffers out(rows.size(), 2);
    const ts_status s =
        call_sample(sampler, rows, static_cast<int32_t>(kLogits.size()), out.results);
    ASSERT_EQ(s.code, TS_OK) << (s.message ? s.message : "(null)");
    EXPECT_GE(out.results[0].token, 0);
    EXPECT_EQ(out.results[1].token, out.results[0].token);
  }
}

TEST(SamplerErrors, TheLowestFailingRowIsReportedWhateverTheThreads) {
  for (const int threads : {0, 1, 4}) {  // 0: on the host's compute threads
    const PluginInstance sampler = make_sampler(threads);
    std::vector<ts_sampler_row> rows;
    for (uint64_t i = 0; i < 64; ++i) rows.push_back(make_row(kLogits, plain_params(i), i));
    rows[40].params.top_p = 2.0f;
    rows[9].params.temperature = -1.0f;
    rows[63].params.top_k = -5;
    ResultBuffers out(rows.size(), 0);
    const ts_status s = call_sample(sampler, rows, 10, out.results);
    ASSERT_EQ(s.code, TS_ERR_INVALID_ARGUMENT);
    const std::string message = s.message;
    EXPECT_EQ(message.rfind("row 9: temperature = -1", 0), 0u) << message;
    EXPECT_NE(message.find("2 more of 64 rows"), std::string::npos) << message;
    int failed = 0;
    for (const auto& r : out.results) failed += r.token == -1;
    EXPECT_EQ(failed, 3);
  }
}

TEST(SamplerErrors, BadBatchArguments) {
  const PluginInstance sampler = make_sampler(1);
  const auto& table = sampler.table<ts_sampler_table>();
  std::vector<ts_sampler_row> rows = {make_row(kLogits, plain_params())};
  ResultBuffers out(1, 0);
  ts_status s = table.sample(sampler.get(), rows.data(), 1, 0, out.results.data());
  EXPECT_EQ(s.code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.message).find("vocab = 0"), std::string::npos) << s.message;
  s = table.sample(sampler.get(), rows.data(), -1, 10, out.results.data());
  EXPECT_EQ(s.code, TS_ERR_INVALID_ARGUMENT);
  s = table.sample(sampler.get(), nullptr, 1, 10, out.results.data());
  EXPECT_EQ(s.code, TS_ERR_INVALID_ARGUMENT);
  s = table.sample(sampler.get(), rows.data(), 1, 10, nullptr);
  EXPECT_EQ(s.code, TS_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace tessera::sampler_test
