// Statistical and boundary tests of the "standard" sampler's three draws (rejection, inverse_cdf,
// race), each: 100k draws per parameter set against the exact truncated, renormalised softmax
// (chi-square, fixed seeds, significance 1e-4), plus proof that the test rejects a slightly wrong
// distribution, plus top-k / top-p / min-p edge cases.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "sampler_harness.hpp"

namespace tessera::sampler_test {
namespace {

constexpr int64_t kDraws = 100000;

// 16 logits, deliberately not sorted by id, spread over ~5 nats.
const std::vector<float> kLogits = {0.3f, 2.0f,  -1.0f, 1.2f, -0.5f, 1.5f,  0.0f,  -2.0f,
                                    0.8f, -0.2f, 1.0f,  0.5f, -1.5f, -0.8f, -3.0f, 0.9f};

// Observed counts fit the distribution: nothing drawn outside its support, and Pearson's
// statistic under the critical value.
testing::AssertionResult fits(const std::vector<int64_t>& observed,
                              const std::vector<double>& probability) {
  for (size_t i = 0; i < observed.size(); ++i) {
    if (probability[i] == 0.0 && observed[i] > 0) {
      return testing::AssertionFailure()
             << "token " << i << " has probability 0 but was drawn " << observed[i] << " times";
    }
  }
  const ChiSquare c = chi_square(observed, probability);
  const double critical = chi_square_critical_1e4(c.degrees_of_freedom);
  if (c.statistic > critical) {
    return testing::AssertionFailure() << "chi-square " << c.statistic << " > critical " << critical
                                       << " (df " << c.degrees_of_freedom << ")";
  }
  return testing::AssertionSuccess() << "chi-square " << c.statistic << " <= critical " << critical
                                     << " (df " << c.degrees_of_freedom << ")";
}

struct Case {
  std::string name;  // the rule under test
  std::string draw;  // the sampler option "draw"
  ts_sampling_params params;
  std::vector<int32_t> prompt;
  std::vector<int32_t> output;
  friend void PrintTo(const Case& c, std::ostream* os) { *os << c.name << "_" << c.draw; }
};

// Every rule with every draw: each is an exact draw from the same distribution.
std::vector<Case> cases() {
  std::vector<Case> rules;
  ts_sampling_params p = plain_params(11);
  p.temperature = 0.8f;
  rules.push_back({"temperature", "", p, {}, {}});
  p = plain_params(12);
  p.top_k = 5;
  rules.push_back({"top_k", "", p, {}, {}});
  p = plain_params(13);
  p.temperature = 1.2f;
  p.top_p = 0.8f;
  rules.push_back({"top_p", "", p, {}, {}});
  p = plain_params(14);
  p.temperature = 0.9f;
  p.min_p = 0.2f;
  rules.push_back({"min_p", "", p, {}, {}});
  p = plain_params(15);
  p.temperature = 0.7f;
  p.top_k = 10;
  p.top_p = 0.9f;
  p.min_p = 0.2f;
  p.repetition_penalty = 1.3f;
  p.frequency_penalty = 0.4f;
  p.presence_penalty = 0.3f;
  rules.push_back({"combined", "", p, {0, 3, 3, 7}, {1, 1, 4, 9, 1}});
  std::vector<Case> all;
  for (const char* draw : {"rejection", "inverse_cdf", "race"}) {
    for (Case c : rules) {
      c.draw = draw;
      all.push_back(c);
    }
  }
  return all;
}

class SamplerDistribution : public testing::TestWithParam<Case> {};

TEST_P(SamplerDistribution, MatchesExactTruncatedSoftmaxAndRejectsNearMisses) {
  const Case& c = GetParam();
  const PluginInstance sampler = make_sampler(1, c.draw);
  const auto tokens = draw_tokens(sampler, kLogits, c.params, kDraws, &c.prompt, &c.output);
  const auto observed = histogram(tokens, kLogits.size());

  const auto penalised = reference_penalised(kLogits, c.params, c.prompt, c.output);
  const auto exact = reference_distribution(penalised, c.params);
  EXPECT_TRUE(fits(observed, exact)) << c.name;

  // Power check: the same statistic must reject a distribution 10% off in temperature (same
  // support, so only the chi-square can tell them apart)...
  ts_sampling_params hotter = c.params;
  hotter.temperature *= 1.1f;
  EXPECT_FALSE(fits(observed, reference_distribution(penalised, hotter))) << c.name;
  // ...and the truncation or penalty rule being tested, done wrong.
  std::vector<double> wrong;
  if (c.name == "temperature") {
    wrong = reference_distribution(penalised, plain_params());  // temperature ignored
  } else if (c.name == "top_k") {
    ts_sampling_params p = c.params;
    p.top_k += 1;
    wrong = reference_distribution(penalised, p);
  } else if (c.name == "top_p") {
    ts_sampling_params p = c.params;
    p.top_p = 1.0f;  // nucleus ignored: renormalised over everything
    wrong = reference_distribution(penalised, p);
  } else if (c.name == "min_p") {
    ts_sampling_params p = c.params;
    p.min_p = 0.12f;  // a looser cut keeps more tokens
    wrong = reference_distribution(penalised, p);
  } else {
    const std::vector<int32_t> none;
    wrong = reference_distribution(reference_penalised(kLogits, c.params, none, none), c.params);
  }
  EXPECT_NE(wrong, exact) << c.name << ": the wrong distribution must differ";
  EXPECT_FALSE(fits(observed, wrong)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Standard, SamplerDistribution, testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name + "_" + info.param.draw; });

// The boundary cases below, for each draw (the option "draw").
class SamplerTruncation : public testing::TestWithParam<std::string> {};

TEST_P(SamplerTruncation, TopKOneAlwaysTakesTheArgmax) {
  const PluginInstance sampler = make_sampler(1, GetParam());
  ts_sampling_params p = plain_params(3);
  p.temperature = 5.0f;
  p.top_k = 1;
  for (const int32_t t : draw_tokens(sampler, kLogits, p, 2000)) ASSERT_EQ(t, 1);
}

TEST_P(SamplerTruncation, TopKOneKeepsEveryTokenTiedForFirst) {
  const PluginInstance sampler = make_sampler(1, GetParam());
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 3.0f, 2.9f};
  ts_sampling_params p = plain_params(4);
  p.top_k = 1;
  const auto counts = histogram(draw_tokens(sampler, logits, p, 20000), logits.size());
  EXPECT_EQ(counts[1] + counts[3], 20000);
  // Binomial(20000, 1/2): sd = 71; allow 5 sd.
  EXPECT_NEAR(counts[1], 10000, 355);
}

TEST_P(SamplerTruncation, TopKAtOrAboveVocabIsOff) {
  const PluginInstance sampler = make_sampler(1, GetParam());
  ts_sampling_params off = plain_params(5);
  const auto reference = draw_tokens(sampler, kLogits, off, 3000);
  for (const int32_t k : {16, 17, 1000000}) {
    ts_sampling_params p = off;
    p.top_k = k;
    EXPECT_EQ(draw_tokens(sampler, kLogits, p, 3000), reference) << "top_k " << k;
  }
  ts_sampling_params p = off;
  p.top_k = 15;  // removes the least likely token: some draw must differ or vanish
  const auto counts = histogram(draw_tokens(sampler, kLogits, p, 3000), kLogits.size());
  EXPECT_EQ(counts[14], 0);
}

TEST_P(SamplerTruncation, TinyTopPKeepsOnlyTheMostLikelyToken) {
  const PluginInstance sampler = make_sampler(1, GetParam());
  ts_sampling_params p = plain_params(6);
  p.temperature = 3.0f;
  p.top_p = 1e-6f;
  for (const int32_t t : draw_tokens(sampler, kLogits, p, 2000)) ASSERT_EQ(t, 1);
}

TEST_P(SamplerTruncation, TopPKeepsTheSmallestPrefixReachingTheMass) {
  const PluginInstance sampler = make_sampler(1, GetParam());
  const std::vector<float> logits = {0.0f, 1.0f, -0.5f};  // probabilities sorted: 1, 0, 2
  const auto exact =
      reference_distribution(reference_penalised(logits, plain_params(), {}, {}), plain_params());
  const double p1 = exact[1];
  ts_sampling_params p = plain_params(7);
  p.top_p = static_cast<float>(p1 - 1e-4);  // the first token alone reaches it
  auto counts = histogram(draw_tokens(sampler, logits, p, 2000), logits.size());
  EXPECT_EQ(counts[1], 2000);
  p.top_p = static_cast<float>(p1 + 1e-4);  // needs the second token, not the third
  counts = histogram(draw_tokens(sampler, logits, p, 4000), logits.size());
  EXPECT_GT(counts[0], 0);
  EXPECT_EQ(counts[2], 0);
  p.top_p = static_cast<float>(p1 + exact[0] + 1e-4);  // needs all three
  counts = histogram(draw_tokens(sampler, logits, p, 4000), logits.size());
  EXPECT_GT(counts[2], 0);
}

TEST_P(SamplerTruncation, AllEqualLogitsKeepEveryTokenWhateverTheCut) {
  const PluginInstance sampler = make_sampler(1, GetParam());
  const std::vector<float> logits(8, 0.25f);
  const std::vector<double> uniform(8, 1.0 / 8);
  ts_sampling_params p = plain_params(8);
  p.top_k = 3;
  p.top_p = 0.3f;
  p.min_p = 0.9f;
  const auto observed = histogram(draw_tokens(sampler, logits, p, 40000), logits.size());
  EXPECT_TRUE(fits(observed, uniform));
}

TEST_P(SamplerTruncation, MinPOneKeepsOnlyTheMostLikely) {
  const PluginInstance sampler = make_sampler(1, GetParam());
  ts_sampling_params p = plain_params(9);
  p.temperature = 2.0f;
  p.min_p = 1.0f;
  for (const int32_t t : draw_tokens(sampler, kLogits, p, 2000)) ASSERT_EQ(t, 1);
}

TEST_P(SamplerTruncation, TinyTemperatureBehavesAsArgmax) {
  const PluginInstance sampler = make_sampler(1, GetParam());
  ts_sampling_params p = plain_params(10);
  p.temperature = 1e-30f;
  for (const int32_t t : draw_tokens(sampler, kLogits, p, 2000)) ASSERT_EQ(t, 1);
}

INSTANTIATE_TEST_SUITE_P(EveryDraw, SamplerTruncation,
                         testing::Values("rejection", "inverse_cdf", "race"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tessera::sampler_test
