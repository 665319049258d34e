// The coupling of `tessera ab` (docs/ab.md "Coupling"): the arms sample with the standard
// sampler's coupled draw unless their configuration names a draw, the teacher-forced TV between
// the arms' sampling distributions is computed by the documented rules, and on the shipped model
// bf16 vs fp8 the free-running pairs part no more often than that TV allows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "ab/ab_arm.hpp"
#include "ab/ab_runner.hpp"
#include "ab/ab_summary.hpp"
#include "ab/coupling_summary.hpp"
#include "ab/prompt_set.hpp"
#include "ab/sampling_distribution.hpp"
#include "comparison/coupled_draw.hpp"
#include "config/config.hpp"

namespace tessera::ab {
namespace {

const std::filesystem::path kData = std::filesystem::path(TESSERA_SOURCE_DIR) / "tests/ab/data";
const std::vector<std::filesystem::path> kPluginDirs = {TESSERA_PLUGIN_DIR};

TEST(AbCoupledDraw, AddedOnlyWhereTheStandardSamplerHasNoDraw) {
  EXPECT_EQ(with_coupled_draw("standard", ""), R"({"draw":"race"})");
  EXPECT_EQ(with_coupled_draw("standard", "{}"), R"({"draw":"race"})");
  EXPECT_EQ(with_coupled_draw("standard", R"({"threads":2})"), R"({"draw":"race","threads":2})");
  EXPECT_EQ(with_coupled_draw("standard", R"({"draw":"rejection"})"), R"({"draw":"rejection"})");
  EXPECT_EQ(with_coupled_draw("other", "{}"), "{}");
  EXPECT_EQ(with_coupled_draw("standard", "[1]"), "[1]");  // the plugin refuses it, not us
}

TEST(AbSamplingDistribution, FollowsTheSamplersRules) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 2.0f, 0.0f};
  std::vector<double> p;
  sampling_distribution(logits, {0.0}, p);  // greedy: the argmax
  EXPECT_EQ(p, (std::vector<double>{0, 1, 0, 0, 0}));
  sampling_distribution(logits, {1.0}, p);
  double z = 0;
  for (const float l : logits) z += std::exp(static_cast<double>(l));
  for (size_t i = 0; i < logits.size(); ++i) {
    EXPECT_NEAR(p[i], std::exp(static_cast<double>(logits[i])) / z, 1e-15);
  }
  sampling_distribution(logits, {1.0, 2}, p);  // top-2: the tie at the 2nd place is kept
  EXPECT_EQ(p[0], 0.0);
  EXPECT_EQ(p[4], 0.0);
  EXPECT_NEAR(p[1], std::exp(3.0) / (std::exp(3.0) + 2 * std::exp(2.0)), 1e-15);
  // top-p 0.5: token 1 alone holds 0.58 of the mass.
  sampling_distribution(logits, {1.0, 0, 0.5}, p);
  EXPECT_EQ(p, (std::vector<double>{0, 1, 0, 0, 0}));
  // top-p 0.7: token 1 then the tie 2, 3 (both kept).
  sampling_distribution(logits, {1.0, 0, 0.7}, p);
  EXPECT_GT(p[3], 0.0);
  EXPECT_EQ(p[0], 0.0);
  // min-p 0.3: weights e^-1 = 0.37 kept, e^-2 = 0.14 dropped.
  sampling_distribution(logits, {1.0, 0, 1.0, 0.3}, p);
  EXPECT_GT(p[2], 0.0);
  EXPECT_EQ(p[0], 0.0);
  const std::vector<double> a = {0.5, 0.5, 0}, b = {0.25, 0.5, 0.25};
  EXPECT_DOUBLE_EQ(total_variation(a, b), 0.25);
  EXPECT_EQ(total_variation(a, a), 0.0);
}

// A hand-made report: pair 0 identical over 3 tokens ending with "length", pair 1 parting at
// output index 1. TVs 0.1, 0.2, 0.3 at output indices 0, 1, 2 of both sequences.
TEST(AbCouplingSummary, CountsTheDecisionsTakenFromIdenticalContexts) {
  AbReport r;
  r.prompts = {{"p", "prompt", 2}};
  RunPair same;
  same.a.tokens = same.b.tokens = {7, 8, 9};
  same.a.finish_reason = same.b.finish_reason = "length";
  same.identical = true;
  RunPair parted;
  parted.seed = 1;
  parted.a.tokens = {7, 5, 5};
  parted.b.tokens = {7, 6, 6};
  parted.a.finish_reason = parted.b.finish_reason = "length";
  parted.first_divergence = 1;
  r.runs = {same, parted};
  for (const RunPair& pair : r.runs) {
    ScoredSequence s;
    s.prompt_tokens = 2;
    s.continuation = pair.a.tokens;
    s.positions.resize(5);
    for (size_t t = 0; t < 3; ++t) s.positions[1 + t].tv = 0.1 * static_cast<double>(t + 1);
    r.sequences.push_back(s);
  }
  const CouplingSummary c = summarize_coupling(r);
  EXPECT_EQ(c.at_risk, 5);  // 3 + 2
  EXPECT_EQ(c.diverged, 1);
  EXPECT_DOUBLE_EQ(c.observed_rate, 0.2);
  EXPECT_NEAR(c.mean_tv, (0.1 + 0.2 + 0.3 + 0.1 + 0.2) / 5, 1e-15);
  double bound = 0;
  for (const double tv : {0.1, 0.2, 0.3, 0.1, 0.2}) bound += 2 * tv / (1 + tv) / 5;
  EXPECT_NEAR(c.expected_rate_bound, bound, 1e-15);
  EXPECT_EQ(c.at_risk_by_index, (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(c.diverged_by_index, (std::vector<int64_t>{0, 1, 0}));
  EXPECT_NEAR(c.tv_by_index[1], 0.2, 1e-15);
}

AbReport run_shipped(ArmPair& arms) {
  auto prompts = load_prompts(kData / "tiny-dsv4-prompts.jsonl");
  prompts.resize(4);
  tokenize_prompts(prompts, arms.a.tokenizer.get(), arms.a.runtime->model_config().vocab_size);
  AbOptions options;
  options.max_tokens = 48;
  options.seeds = 4;
  options.warmup = false;
  return run_ab(arms, prompts, options);
}

void print(const char* what, const AbReport& report) {
  const FreeRunningSummary fr = summarize_free_running(report);
  const CouplingSummary c = summarize_coupling(report);
  std::printf(
      "%s: %lld of %lld pairs identical, first divergence p50 %.1f; %lld of %lld decisions from "
      "identical contexts parted (%.4f), mean TV %.3e, bound 2TV/(1+TV) %.3e\n",
      what, static_cast<long long>(fr.identical), static_cast<long long>(fr.pairs),
      fr.first_divergence.count > 0 ? fr.first_divergence.p50 : -1.0,
      static_cast<long long>(c.diverged), static_cast<long long>(c.at_risk), c.observed_rate,
      c.mean_tv, c.expected_rate_bound);
}

// bf16 vs fp8 on models/tiny-dsv4 (temperature 0.6, top-p 0.95), 4 prompts x 4 seeds x 48 tokens:
// ~580 decisions from identical contexts (outputs that stop early have fewer). The coupled draw
// parts with probability <= 2 TV per decision, so the number parted is at most a sum of Bernoullis
// of mean m <= 2 n TV; the test allows 3 n TV + 3 sqrt(3 n TV) + 1 (more than 3 Poisson standard
// deviations above the bound).
TEST(AbCoupling, Fp8AgainstBf16OnTheShippedModelPartsAsTheTvAllows) {
  ArmPair arms = load_arm_pair(kData / "tiny-dsv4.toml", kData / "tiny-dsv4-fp8.toml", kPluginDirs);
  const AbReport report = run_shipped(arms);
  EXPECT_NE(report.arms[0].sampler_options.find(R"("draw":"race")"), std::string::npos);
  print("bf16 vs fp8, coupled draw", report);
  const CouplingSummary c = summarize_coupling(report);
  const FreeRunningSummary fr = summarize_free_running(report);
  ASSERT_GT(c.at_risk, 400);
  EXPECT_GT(c.mean_tv, 0.0);
  const double allowed = 3 * c.at_risk * c.mean_tv;
  EXPECT_LE(static_cast<double>(c.diverged), allowed + 3 * std::sqrt(allowed) + 1);
  EXPECT_GE(fr.identical * 2, fr.pairs) << "most pairs identical";
}

// The same pair with the rejection draw named in both configurations (the coupling is then off;
// printed for docs/ab.md), and identical arms: every pair identical.
TEST(AbCoupling, NamedDrawIsKeptAndIdenticalArmsNeverPart) {
  Config a = load_config_file(kData / "tiny-dsv4.toml");
  Config b = load_config_file(kData / "tiny-dsv4-fp8.toml");
  a.sampler.options_json = b.sampler.options_json = R"({"draw":"rejection"})";
  ArmPair uncoupled = make_arm_pair(a, b, kPluginDirs);
  const AbReport rejection = run_shipped(uncoupled);
  EXPECT_EQ(rejection.arms[1].sampler_options, R"({"draw":"rejection"})");
  print("bf16 vs fp8, rejection draw", rejection);

  ArmPair same = load_arm_pair(kData / "tiny-dsv4.toml", kData / "tiny-dsv4.toml", kPluginDirs);
  const AbReport report = run_shipped(same);
  const FreeRunningSummary fr = summarize_free_running(report);
  EXPECT_EQ(fr.identical, fr.pairs);
  EXPECT_EQ(summarize_coupling(report).diverged, 0);
  EXPECT_EQ(summarize_coupling(report).mean_tv, 0.0);
}

}  // namespace
}  // namespace tessera::ab
