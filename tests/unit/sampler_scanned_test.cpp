// sample_scanned (ABI 1.1): the standard sampler given the host's row scans returns exactly the
// tokens (and logprobs) sample gives, greedy or not, with penalties, top-p and ties; a scan that
// contradicts its row is not trusted; a 1.0-sized table is still accepted by the host. Greedy rows
// without their values (ABI 1.5, "greedy_from_scan") are answered by their scans; any other row
// without values is refused, naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "plugins/sampler_call.hpp"
#include "sampler_harness.hpp"

namespace tessera::sampler_test {
namespace {

ts_row_scan scan_of(const std::vector<float>& logits) {
  const auto it = std::max_element(logits.begin(), logits.end());  // the first of equal maxima
  return {*it, static_cast<int32_t>(it - logits.begin())};
}

std::vector<int32_t> tokens_of(const std::vector<ts_sampler_result>& results) {
  std::vector<int32_t> t;
  t.reserve(results.size());
  for (const auto& r : results) {
    t.push_back(r.token);
  }
  return t;
}

TEST(SamplerScanned, SameTokensAsSample) {
  const PluginInstance sampler = make_sampler(2);
  const auto& table = sampler.table<ts_sampler_table>();
  ASSERT_GE(table.struct_size, sizeof(ts_sampler_table));
  ASSERT_NE(table.sample_scanned, nullptr);
  const int32_t vocab = 4096;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<std::vector<float>> logits(96, std::vector<float>(vocab));
  std::vector<ts_sampler_row> rows;
  std::vector<ts_row_scan> scans;
  const std::vector<int32_t> prompt = {5, 9, 13}, output = {7, 7, 2};
  for (size_t i = 0; i < logits.size(); ++i) {
    for (float& v : logits[i]) {
      v = normal(rng);
    }
    if (i % 5 == 0) {  // a tie at the top: the lowest id must win
      const ts_row_scan s = scan_of(logits[i]);
      logits[i][static_cast<size_t>(vocab - 1 - s.argmax)] = s.max;
    }
    ts_sampling_params p = plain_params(1000 + i);
    p.temperature = i % 3 == 0 ? 0.0f : 0.8f;
    if (i % 4 == 1) {
      p.top_p = 0.9f;
    }
    if (i % 6 == 2) {
      p.repetition_penalty = 1.3f;  // penalised rows scan their own copy
    }
    if (i % 7 == 3) {
      p.logprobs = 1;
    }
    rows.push_back(make_row(logits[i], p, i, &prompt, &output));
    scans.push_back(scan_of(logits[i]));
  }
  std::vector<ts_sampler_result> plain(rows.size()), scanned(rows.size());
  ASSERT_EQ(call_sample(sampler, rows, vocab, plain).code, TS_OK);
  ASSERT_EQ(table
                .sample_scanned(sampler.get(), rows.data(), scans.data(),
                                static_cast<int32_t>(rows.size()), vocab, scanned.data())
                .code,
            TS_OK);
  EXPECT_EQ(tokens_of(scanned), tokens_of(plain));
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(scanned[i].logprob, plain[i].logprob) << i;
  }
  for (size_t i = 0; i < rows.size(); i += 15) {  // the tied greedy rows took the lowest id
    if (rows[i].params.temperature == 0.0f && rows[i].params.repetition_penalty == 1.0f) {
      EXPECT_EQ(scanned[i].token, scans[i].argmax);
    }
  }
}

TEST(SamplerScanned, AScanThatContradictsItsRowIsNotTrusted) {
  const PluginInstance sampler = make_sampler(0);
  const auto& table = sampler.table<ts_sampler_table>();
  std::vector<float> logits(512, 0.0f);
  logits[40] = 3.0f;
  ts_sampling_params p = plain_params();
  p.temperature = 0.0f;
  const std::vector<ts_sampler_row> rows = {make_row(logits, p)};
  for (const ts_row_scan wrong : {ts_row_scan{3.0f, 41}, ts_row_scan{3.0f, 512},
                                  ts_row_scan{3.0f, -1}, ts_row_scan{0.0f, 7}}) {
    std::vector<ts_sampler_result> out(1);
    ASSERT_EQ(table.sample_scanned(sampler.get(), rows.data(), &wrong, 1, 512, out.data()).code,
              TS_OK);
    // {0, 7}: logits[7] == 0 is consistent but not the max; the plugin cannot tell (the host
    // promises the max), so it answers 7. The others are caught by the one-load check.
    EXPECT_EQ(out[0].token, wrong.max == 0.0f ? 7 : 40) << wrong.max << " at " << wrong.argmax;
  }
  std::vector<ts_sampler_result> out(1);
  EXPECT_EQ(table.sample_scanned(sampler.get(), rows.data(), nullptr, 1, 512, out.data()).code,
            TS_ERR_INVALID_ARGUMENT);
}

TEST(SamplerScanned, GreedyRowsWithoutValuesAreAnsweredByTheirScans) {
  const PluginInstance sampler = make_sampler(0);
  const auto& table = sampler.table<ts_sampler_table>();
  EXPECT_TRUE(sampler_takes_greedy_from_scan(sampler));
  const int32_t vocab = 512;
  std::vector<float> logits(vocab, 0.0f);
  logits[40] = 3.0f;
  ts_sampling_params greedy = plain_params();
  greedy.temperature = 0.0f;
  greedy.top_p = 0.5f;  // truncation keeps the argmax: still greedy
  ts_sampling_params drawn = plain_params(3);
  drawn.temperature = 0.7f;
  // Row 0 with its values, rows 1 and 2 without: row 1's scan answers it (not row 0's values).
  std::vector<ts_sampler_row> rows = {make_row(logits, greedy), make_row(logits, greedy),
                                      make_row(logits, greedy)};
  rows[1].logits = nullptr;
  rows[2].logits = nullptr;
  const std::vector<ts_row_scan> scans = {{3.0f, 40}, {9.0f, 123}, {1.5f, 0}};
  std::vector<ts_sampler_result> out(3);
  ASSERT_EQ(
      table.sample_scanned(sampler.get(), rows.data(), scans.data(), 3, vocab, out.data()).code,
      TS_OK);
  EXPECT_EQ(out[0].token, 40);
  EXPECT_EQ(out[1].token, 123);
  EXPECT_EQ(out[2].token, 0);

  // The same through sample_grouped, whose rows without values need no group maxima.
  std::vector<float> group_max(static_cast<size_t>(TS_LOGIT_GROUP_COUNT(vocab)), 0.0f);
  group_max[40 / 256 * 16 + 40 % 16] = 3.0f;
  const std::vector<ts_row_groups> groups = {
      {scans[0], group_max.data()}, {scans[1], nullptr}, {scans[2], nullptr}};
  ASSERT_EQ(
      table.sample_grouped(sampler.get(), rows.data(), groups.data(), 3, vocab, out.data()).code,
      TS_OK);
  EXPECT_EQ(out[1].token, 123);

  // A non-finite row (argmax -1): that row fails as numeric, the others are sampled.
  const std::vector<ts_row_scan> bad = {{3.0f, 40}, {0.0f, -1}, {1.5f, 0}};
  ts_status s = table.sample_scanned(sampler.get(), rows.data(), bad.data(), 3, vocab, out.data());
  EXPECT_EQ(s.code, TS_ERR_NUMERIC);
  EXPECT_NE(std::string(s.message).find("row 1: the host's scan found a NaN or infinity"),
            std::string::npos)
      << s.message;
  EXPECT_EQ(out[1].token, -1);
  EXPECT_EQ(out[2].token, 0);

  // Without values only when greedy, with a scan, and a scan inside the vocabulary.
  for (const char* what : {"drawn", "penalised", "logprobs", "no scan", "outside"}) {
    const std::string w = what;
    std::vector<ts_sampler_row> one = {make_row(logits, greedy)};
    one[0].logits = nullptr;
    ts_row_scan scan{3.0f, 40};
    if (w == "drawn") one[0].params = drawn;
    if (w == "penalised") one[0].params.presence_penalty = 0.5f;
    if (w == "logprobs") one[0].params.logprobs = 1;
    if (w == "outside") scan.argmax = vocab;
    std::vector<ts_sampler_result> r(1);
    s = w == "no scan" ? table.sample(sampler.get(), one.data(), 1, vocab, r.data())
                       : table.sample_scanned(sampler.get(), one.data(), &scan, 1, vocab, r.data());
    EXPECT_EQ(s.code, TS_ERR_INVALID_ARGUMENT) << what;
    EXPECT_NE(std::string(s.message).find("row 0: logits is NULL"), std::string::npos)
        << what << ": " << s.message;
    EXPECT_EQ(r[0].token, -1) << what;
  }
}

}  // namespace
}  // namespace tessera::sampler_test
