// The rejection draw (plugins/sampler/src/rejection_draw.*, the default for rows without top-k,
// top-p or min-p): docs/sampler.md "Rejection draw" defines it; this file writes that definition
// out independently (grouping, envelope, proposal stream, the fma exp) and compares token for
// token on flat and peaked rows, partial blocks, tiny vocabularies and penalised rows; checks the
// draws against the exact softmax (chi-square, and a 5% hotter temperature must be rejected);
// and checks that the host's group maxima (sample_grouped, ABI 1.2) give the tokens sample gives,
// and are ignored when they contradict the row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ops/compute_threads.hpp"
#include "rejection_reference.hpp"
#include "sampler_harness.hpp"

namespace tessera::sampler_test {
namespace {

TEST(SamplerRejection, SameTokensAsTheDocumentedDefinition) {
  const PluginInstance sampler = make_sampler(2);
  std::mt19937_64 rng(31);
  const std::vector<int32_t> prompt = {1, 2, 3}, output = {3, 4, 4};
  int checked = 0;
  for (const size_t vocab : {5, 300, 1000, 16384}) {
    for (const float std_dev : {0.3f, 1.0f, 4.0f}) {
      std::vector<std::vector<float>> logits;
      std::vector<ts_sampler_row> rows;
      logits.reserve(40);
      for (int i = 0; i < 40; ++i) {
        logits.push_back(gaussian_row(rng, vocab, std_dev));
      }
      for (int i = 0; i < 40; ++i) {
        ts_sampling_params p = plain_params(rng());
        p.temperature = i % 3 == 0 ? 0.6f : (i % 3 == 1 ? 1.0f : 1.4f);
        if (i % 4 == 3) {
          p.repetition_penalty = 1.3f;
          p.presence_penalty = 0.5f;
          p.frequency_penalty = 0.25f;
        }
        rows.push_back(make_row(logits[i], p, rng() % 500, &prompt, &output));
      }
      std::vector<ts_sampler_result> results(rows.size());
      ASSERT_EQ(call_sample(sampler, rows, static_cast<int32_t>(vocab), results).code, TS_OK);
      for (size_t i = 0; i < rows.size(); ++i) {
        const ts_sampling_params& p = rows[i].params;
        std::vector<float> l = logits[i];
        if (p.repetition_penalty != 1.0f) {
          const auto penalised = reference_penalised(l, p, prompt, output);
          for (size_t c = 0; c < l.size(); ++c) {
            l[c] = static_cast<float>(penalised[c]);
          }
        }
        ASSERT_EQ(results[i].token,
                  reference_rejection(l, p.temperature, p.seed, rows[i].rng_counter))
            << "vocab " << vocab << " std " << std_dev << " T " << p.temperature << " row " << i;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4 * 3 * 40);
}

// The row's max in several groups (two in one group, one in another block, one in the last,
// partial block): each such group's bound is its exact weight, found group by group.
TEST(SamplerRejection, MaxInSeveralGroupsGivesTheDocumentedTokens) {
  const PluginInstance sampler = make_sampler(2);
  std::mt19937_64 rng(37);
  const size_t vocab = 1000;  // 3 full blocks and a partial one of 232 columns
  int checked = 0;
  for (const std::vector<size_t>& at : std::vector<std::vector<size_t>>{
           {5}, {5, 21}, {5, 21, 300}, {300, 999}, {17, 530, 777, 998}}) {
    std::vector<std::vector<float>> logits;
    std::vector<ts_sampler_row> rows;
    logits.reserve(24);
    for (int i = 0; i < 24; ++i) {
      logits.push_back(gaussian_row(rng, vocab, 1.0f));
      for (const size_t c : at) {
        logits.back()[c] = 4.0f;  // above every Gaussian value drawn here
      }
    }
    for (int i = 0; i < 24; ++i) {
      ts_sampling_params p = plain_params(rng());
      p.temperature = i % 2 == 0 ? 1.0f : 0.7f;
      rows.push_back(make_row(logits[i], p, rng() % 500, nullptr, nullptr));
    }
    std::vector<ts_sampler_result> results(rows.size());
    ASSERT_EQ(call_sample(sampler, rows, static_cast<int32_t>(vocab), results).code, TS_OK);
    for (size_t i = 0; i < rows.size(); ++i) {
      ASSERT_EQ(results[i].token, reference_rejection(logits[i], rows[i].params.temperature,
                                                      rows[i].params.seed, rows[i].rng_counter))
          << "max at " << at.size() << " columns, row " << i;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 5 * 24);
}

// 200k draws of one row against softmax(l / T); a 5% hotter softmax must be rejected.
void expect_fits(const std::vector<float>& logits, ts_sampling_params p,
                 const std::vector<int32_t>& prompt, const std::vector<int32_t>& output) {
  const PluginInstance sampler = make_sampler(2);
  const auto observed =
      histogram(draw_tokens(sampler, logits, p, 200000, &prompt, &output), logits.size());
  const auto penalised = reference_penalised(logits, p, prompt, output);
  const ChiSquare c = chi_square(observed, reference_distribution(penalised, p));
  EXPECT_LT(c.statistic, chi_square_critical_1e4(c.degrees_of_freedom))
      << "vocab " << logits.size() << " T " << p.temperature;
  p.temperature *= 1.05f;
  const ChiSquare h = chi_square(observed, reference_distribution(penalised, p));
  EXPECT_GT(h.statistic, chi_square_critical_1e4(h.degrees_of_freedom))
      << "a 5% hotter softmax was not told apart, vocab " << logits.size();
}

TEST(SamplerRejection, DrawsFitTheSoftmax) {
  std::mt19937_64 rng(8);
  // Flat, then peaked (one token per group dominates: the fewest acceptances, ~1 in 16), a
  // partial last block, fewer tokens than a group's lanes.
  expect_fits(gaussian_row(rng, 1024, 1.0f), plain_params(1), {}, {});
  std::vector<float> peaked = gaussian_row(rng, 1024, 1.0f);
  peaked[700] = 6.0f;
  peaked[3] = 5.0f;
  ts_sampling_params p = plain_params(2);
  p.temperature = 0.8f;
  expect_fits(peaked, p, {}, {});
  expect_fits(gaussian_row(rng, 300, 1.5f), plain_params(3), {}, {});
  expect_fits(gaussian_row(rng, 7, 1.0f), plain_params(4), {}, {});
  ts_sampling_params penalised = plain_params(5);  // the groups of the penalised copy
  penalised.repetition_penalty = 2.0f;
  penalised.presence_penalty = -1.5f;  // raises its tokens: a raw group maximum would be too low
  expect_fits(gaussian_row(rng, 600, 1.0f), penalised, {10, 20, 300}, {20, 599, 599});
}

// sampler_threads 0: on the host's compute threads, which hand 64 rows out 4 at a time (each
// thread building its next row's envelope before it draws this row's proposals: greedy, top-p
// and penalised rows between them are not prepared); 2: the plugin's own pool.
void expect_group_maxima_give_the_tokens_sample_gives(int sampler_threads) {
  SCOPED_TRACE(sampler_threads);
  const PluginInstance sampler = make_sampler(sampler_threads);
  const auto& table = sampler.table<ts_sampler_table>();
  ASSERT_GE(table.struct_size, sizeof(ts_sampler_table));
  ASSERT_NE(table.sample_grouped, nullptr);
  std::mt19937_64 rng(12);
  const int32_t vocab = 4000;
  const std::vector<int32_t> context = {5, 17, 17, 3999};
  std::vector<std::vector<float>> logits, groups, wrong;
  std::vector<ts_sampler_row> rows;
  for (int i = 0; i < 64; ++i) {
    logits.push_back(gaussian_row(rng, vocab, 2.0f));
  }
  for (int i = 0; i < 64; ++i) {
    ts_sampling_params p = plain_params(100 + i);
    p.temperature = i % 4 == 0 ? 0.0f : 0.9f;
    if (i % 5 == 1) {
      p.top_p = 0.9f;
    }
    if (i % 7 == 2) {
      p.repetition_penalty = 1.3f;
    }
    rows.push_back(make_row(logits[i], p, i, &context, &context));
    groups.push_back(group_maxima(logits[i]));
    // Maxima that contradict the row at its argmax's group (and would move every proposal).
    wrong.push_back(std::vector<float>(groups.back().size(), 100.0f));
  }
  std::vector<ts_row_groups> good(rows.size()), bad(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto it = std::max_element(logits[i].begin(), logits[i].end());
    const ts_row_scan scan{*it, static_cast<int32_t>(it - logits[i].begin())};
    good[i] = {scan, groups[i].data()};
    bad[i] = {scan, wrong[i].data()};
  }
  std::vector<ts_sampler_result> plain(rows.size()), grouped(rows.size()), ignored(rows.size());
  ASSERT_EQ(call_sample(sampler, rows, vocab, plain).code, TS_OK);
  const auto n = static_cast<int32_t>(rows.size());
  ASSERT_EQ(
      table.sample_grouped(sampler.get(), rows.data(), good.data(), n, vocab, grouped.data()).code,
      TS_OK);
  ASSERT_EQ(
      table.sample_grouped(sampler.get(), rows.data(), bad.data(), n, vocab, ignored.data()).code,
      TS_OK);
  int temperature_rows = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(grouped[i].token, plain[i].token) << "row " << i;
    EXPECT_EQ(ignored[i].token, plain[i].token) << "row " << i;
    temperature_rows += rows[i].params.temperature > 0.0f && rows[i].params.top_p == 1.0f;
  }
  EXPECT_GT(temperature_rows, 30);
  EXPECT_EQ(table.sample_grouped(sampler.get(), rows.data(), nullptr, n, vocab, plain.data()).code,
            TS_ERR_INVALID_ARGUMENT);
}

TEST(SamplerRejection, HostGroupMaximaGiveTheTokensSampleGives) {
  const int compute_threads_before = ops::compute_threads();
  ops::set_compute_threads(2);
  expect_group_maxima_give_the_tokens_sample_gives(0);
  ops::set_compute_threads(compute_threads_before);
  expect_group_maxima_give_the_tokens_sample_gives(2);
}

TEST(SamplerRejection, TheDrawOptionIsCheckedAndInverseCdfKeepsTheEarlierTokens) {
  EXPECT_THROW(registry().create(standard_plugin(), R"({"draw":"gumbel"})", kCpu), Error);
  EXPECT_THROW(registry().create(standard_plugin(), R"({"draw":1})", kCpu), Error);
  // The two draws are different functions of the seed: on a flat row they disagree often.
  std::mt19937_64 rng(3);
  const std::vector<float> row = gaussian_row(rng, 2048, 0.5f);
  const auto a = draw_tokens(make_sampler(1, "rejection"), row, plain_params(9), 200);
  const auto b = draw_tokens(make_sampler(1, "inverse_cdf"), row, plain_params(9), 200);
  EXPECT_GT(
      std::inner_product(a.begin(), a.end(), b.begin(), 0, std::plus<>(), std::not_equal_to<>()),
      150);
}

}  // namespace
}  // namespace tessera::sampler_test
