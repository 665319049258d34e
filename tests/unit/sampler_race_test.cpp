// The coupled draw (option draw = "race", plugins/sampler/src/race_draw.*): docs/sampler.md
// "Coupled draw" defines it; this file writes the definition out (noise per token, Gumbel scores,
// argmax over the kept set) and compares token for token, so the plugin's pruning of columns that
// cannot win is shown to change nothing (the host's group maxima neither); fits large rows to the
// exact softmax; and measures the coupling itself: a logit moved by 1e-6 changes almost no token,
// and two rows that differ a little disagree at most as often as their total-variation distance
// allows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "rejection_reference.hpp"
#include "sampler_harness.hpp"

namespace tessera::sampler_test {
namespace {

// The definition (docs/sampler.md "Coupled draw"), one column at a time: column c of group
// g = (c / 256) 16 + c % 16, member m = (c % 256) / 16 of the group's n; U(x) = (2 (x >> 12) + 1)
// 2^-53; the group's top member floor(n h / 2^64) has E = -log(U(mix64(b + (2g + 1) gamma))) / n,
// h = mix64(b + (2g + 2) gamma); any other E_top - log(U(mix64(b' + (c + 1) gamma))),
// b' = mix64(b ^ 0x6A09E667F3BCC909); score (l_c - l_max) / T - log(E) over the kept columns; the
// highest score, the lowest id among equal ones. logits are the penalised row as floats.
int32_t reference_race(const std::vector<float>& logits,
                       const std::vector<double>& kept_probability, float temperature,
                       uint64_t seed, uint64_t counter) {
  const uint64_t b = reference_draw_bits(seed, counter);
  const uint64_t member_key = reference_mix64(b ^ 0x6A09E667F3BCC909ULL);
  const auto vocab = static_cast<int64_t>(logits.size());
  auto uniform = [](uint64_t x) { return static_cast<double>(2 * (x >> 12) + 1) * 0x1.0p-53; };
  const double top = *std::max_element(logits.begin(), logits.end());
  int32_t best = -1;
  double best_score = -INFINITY;
  for (int64_t c = 0; c < vocab; ++c) {
    if (kept_probability[c] <= 0.0) continue;
    const int64_t block = c / 256, lane = c % 16, member = (c % 256) / 16;
    const int64_t g = block * 16 + lane;
    int64_t n = 0;
    for (int64_t x = block * 256 + lane; x < std::min(vocab, block * 256 + 256); x += 16) ++n;
    const double e_top =
        -std::log(uniform(reference_mix64(b + static_cast<uint64_t>(2 * g + 1) * kGamma))) /
        static_cast<double>(n);
    const uint64_t h = reference_mix64(b + static_cast<uint64_t>(2 * g + 2) * kGamma);
    const auto pick = static_cast<int64_t>((static_cast<unsigned __int128>(h) * n) >> 64);
    const double e = member == pick
                         ? e_top
                         : e_top - std::log(uniform(reference_mix64(
                                       member_key + static_cast<uint64_t>(c + 1) * kGamma)));
    const double s =
        (static_cast<double>(logits[c]) - top) / static_cast<double>(temperature) - std::log(e);
    if (best < 0 || s > best_score) {
      best = static_cast<int32_t>(c);
      best_score = s;
    }
  }
  return best;
}

struct RaceRow {
  std::string name;
  std::vector<float> logits;
  ts_sampling_params params;
  std::vector<int32_t> prompt;
  std::vector<int32_t> output;
};

std::vector<RaceRow> race_rows() {
  std::mt19937_64 rng(45);
  std::vector<RaceRow> rows;
  rows.push_back({"flat", gaussian_row(rng, 1024, 1.0f), plain_params(1), {}, {}});
  ts_sampling_params p = plain_params(2);
  p.temperature = 0.7f;
  rows.push_back({"peaked", gaussian_row(rng, 4096, 8.0f), p, {}, {}});
  p = plain_params(3);
  p.temperature = 0.05f;
  rows.push_back({"tiny_temperature", gaussian_row(rng, 300, 1.0f), p, {}, {}});
  rows.push_back({"seven_tokens", gaussian_row(rng, 7, 1.0f), plain_params(4), {}, {}});
  p = plain_params(5);
  p.top_k = 40;
  rows.push_back({"top_k", gaussian_row(rng, 2000, 2.0f), p, {}, {}});
  p = plain_params(6);
  p.top_p = 0.9f;
  p.temperature = 1.3f;
  rows.push_back({"top_p", gaussian_row(rng, 2000, 2.0f), p, {}, {}});
  p = plain_params(7);
  p.min_p = 0.05f;
  rows.push_back({"min_p", gaussian_row(rng, 2000, 2.0f), p, {}, {}});
  p = plain_params(8);
  p.top_k = 100;
  p.top_p = 0.8f;
  p.min_p = 0.02f;
  p.repetition_penalty = 1.5f;
  p.presence_penalty = -1.0f;  // raises the tokens it reads
  rows.push_back({"combined", gaussian_row(rng, 1500, 2.0f), p, {3, 70, 900}, {70, 1499, 5}});
  return rows;
}

TEST(SamplerRace, SameTokensAsTheDefinition) {
  const PluginInstance sampler = make_sampler(2, "race");
  for (const RaceRow& r : race_rows()) {
    SCOPED_TRACE(r.name);
    const std::vector<double> penalised =
        reference_penalised(r.logits, r.params, r.prompt, r.output);
    const std::vector<float> as_floats(penalised.begin(), penalised.end());
    const std::vector<double> kept = reference_distribution(penalised, r.params);
    const auto tokens = draw_tokens(sampler, r.logits, r.params, 300, &r.prompt, &r.output);
    int differ = 0;
    for (size_t c = 0; c < tokens.size(); ++c) {
      const int32_t want = reference_race(as_floats, kept, r.params.temperature, r.params.seed, c);
      differ += tokens[c] != want ? 1 : 0;
    }
    EXPECT_EQ(differ, 0);
  }
}

// 100k draws; the statistic must also reject a 10% hotter softmax (power check).
void expect_fits(const std::vector<float>& logits, const ts_sampling_params& p) {
  const PluginInstance sampler = make_sampler(1, "race");
  const auto observed = histogram(draw_tokens(sampler, logits, p, 100000), logits.size());
  const std::vector<double> penalised(logits.begin(), logits.end());
  const std::vector<double> exact = reference_distribution(penalised, p);
  for (size_t i = 0; i < exact.size(); ++i) {
    if (exact[i] == 0.0) EXPECT_EQ(observed[i], 0) << "token " << i;
  }
  const ChiSquare fit = chi_square(observed, exact);
  EXPECT_LE(fit.statistic, chi_square_critical_1e4(fit.degrees_of_freedom));
  ts_sampling_params hotter = p;
  hotter.temperature *= 1.1f;
  const ChiSquare off = chi_square(observed, reference_distribution(penalised, hotter));
  EXPECT_GT(off.statistic, chi_square_critical_1e4(off.degrees_of_freedom));
}

TEST(SamplerRace, DrawsFitTheSoftmaxOnRowsItPrunes) {
  std::mt19937_64 rng(11);
  expect_fits(gaussian_row(rng, 1024, 1.0f), plain_params(1));  // every block holds candidates
  ts_sampling_params p = plain_params(2);
  p.temperature = 0.8f;
  std::vector<float> peaked = gaussian_row(rng, 1000, 3.0f);  // most blocks ruled out at once
  peaked[611] = 9.0f;
  expect_fits(peaked, p);
  p = plain_params(3);
  p.top_p = 0.7f;
  expect_fits(gaussian_row(rng, 300, 2.0f), p);
}

// How many of n draws (counters 0..n-1) change between two rows.
int changed_tokens(const std::string& draw, const std::vector<float>& a,
                   const std::vector<float>& b, const ts_sampling_params& p, int64_t n) {
  const PluginInstance sampler = make_sampler(1, draw);
  const auto x = draw_tokens(sampler, a, p, n);
  const auto y = draw_tokens(sampler, b, p, n);
  int changed = 0;
  for (int64_t i = 0; i < n; ++i) changed += x[i] != y[i] ? 1 : 0;
  return changed;
}

// A logit moved by 1e-6 moves the row's distribution by a total variation of < 1e-6, so a
// coupled draw changes fewer than 10,000 x 2e-6 = 0.02 of 10,000 tokens on average: more than 1
// happens with probability < 2e-4. The other draws' counts are printed for docs/sampler.md.
TEST(SamplerRace, OneLogitMovedByAMillionthChangesAlmostNoToken) {
  std::mt19937_64 rng(12);
  const std::vector<float> row = gaussian_row(rng, 4096, 2.0f);
  const auto top = std::max_element(row.begin(), row.end()) - row.begin();
  for (const auto moved : {static_cast<int64_t>(top), int64_t{1234}}) {
    std::vector<float> nudged = row;
    nudged[moved] += 1e-6f;  // two or three float steps at these magnitudes
    ASSERT_NE(nudged[moved], row[moved]);
    ts_sampling_params p = plain_params(5);
    for (const char* draw : {"race", "rejection", "inverse_cdf"}) {
      const int changed = changed_tokens(draw, row, nudged, p, 10000);
      std::cout << "logit " << moved << " +" << nudged[moved] - row[moved] << ", draw " << draw
                << ": " << changed << " of 10000 tokens changed\n";
      if (std::string(draw) == "race") EXPECT_LE(changed, 1) << "logit " << moved;
    }
  }
}

double total_variation(const std::vector<float>& a, const std::vector<float>& b) {
  const std::vector<double> p = reference_distribution({a.begin(), a.end()}, plain_params());
  const std::vector<double> q = reference_distribution({b.begin(), b.end()}, plain_params());
  double tv = 0.0;
  for (size_t i = 0; i < p.size(); ++i) tv += std::abs(p[i] - q[i]);
  return tv / 2.0;
}

// Gumbel-max with shared noise disagrees with probability at most 2 TV / (1 + TV) (Daliri, Musco
// & Suresh, "Coupling without Communication and Drafter-Invariant Speculative Decoding", 2024,
// Theorem 2). 20,000 draws: the allowance is 4 binomial standard deviations of that rate. The
// rejection draw, measured on the same rows, disagrees far more often (printed).
TEST(SamplerRace, TwoCloseRowsDisagreeAtMostAsTheirTotalVariationAllows) {
  std::mt19937_64 rng(13);
  std::normal_distribution<float> noise(0.0f, 0.02f);
  for (const float spread : {1.0f, 4.0f}) {
    const std::vector<float> a = gaussian_row(rng, 2048, spread);
    std::vector<float> b = a;
    for (float& x : b) x += noise(rng);
    const double tv = total_variation(a, b);
    const double bound = 2.0 * tv / (1.0 + tv);
    constexpr int64_t kN = 20000;
    const double allowance = 4.0 * std::sqrt(bound * (1.0 - bound) / kN) + 1.0 / kN;
    const double race = changed_tokens("race", a, b, plain_params(7), kN) / double(kN);
    const double rejection = changed_tokens("rejection", a, b, plain_params(7), kN) / double(kN);
    std::cout << "spread " << spread << ": TV " << tv << ", race disagrees " << race
              << ", rejection " << rejection << "\n";
    EXPECT_LE(race, bound + allowance) << "TV " << tv;
    EXPECT_GT(race, 0.0) << "the rows differ: some token must";
  }
}

// The host's group maxima (sample_grouped, ABI 1.2) spare the race reading the logits; the tokens
// are those sample gives and the definition's. 4000 columns: a partial last block of 160.
TEST(SamplerRace, HostGroupMaximaGiveTheTokensSampleGives) {
  const PluginInstance sampler = make_sampler(2, "race");
  const auto& table = sampler.table<ts_sampler_table>();
  ASSERT_NE(table.sample_grouped, nullptr);
  std::mt19937_64 rng(14);
  constexpr int32_t kVocab = 4000;
  std::vector<std::vector<float>> logits, groups;
  std::vector<ts_sampler_row> rows;
  std::vector<ts_row_groups> hints;
  for (int i = 0; i < 32; ++i) {
    logits.push_back(gaussian_row(rng, kVocab, i % 2 == 0 ? 1.0f : 5.0f));
    std::vector<float> g(TS_LOGIT_GROUP_COUNT(kVocab), -INFINITY);
    for (int32_t c = 0; c < kVocab; ++c) {
      float& m = g[(c / TS_LOGIT_GROUP_BLOCK) * TS_LOGIT_GROUP_LANES + c % TS_LOGIT_GROUP_LANES];
      m = std::max(m, logits.back()[c]);
    }
    groups.push_back(std::move(g));
  }
  for (int i = 0; i < 32; ++i) {
    ts_sampling_params p = plain_params(300 + i);
    if (i % 4 == 1) p.top_p = 0.9f;
    if (i % 4 == 2) p.min_p = 0.05f;
    rows.push_back(make_row(logits[i], p, static_cast<uint64_t>(i)));
    const auto top = std::max_element(logits[i].begin(), logits[i].end());
    hints.push_back({{*top, top - logits[i].begin()}, groups[i].data()});
  }
  std::vector<ts_sampler_result> plain(rows.size()), grouped(rows.size());
  ASSERT_EQ(call_sample(sampler, rows, kVocab, plain).code, TS_OK);
  ASSERT_EQ(table
                .sample_grouped(sampler.get(), rows.data(), hints.data(),
                                static_cast<int32_t>(rows.size()), kVocab, grouped.data())
                .code,
            TS_OK);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(grouped[i].token, plain[i].token) << "row " << i;
    const std::vector<double> kept = reference_distribution(
        std::vector<double>(logits[i].begin(), logits[i].end()), rows[i].params);
    EXPECT_EQ(plain[i].token, reference_race(logits[i], kept, 1.0f, rows[i].params.seed, i))
        << "row " << i;
  }
}

// Each row alone, then 16 rows of a kind in one batch (counters 0..15, so every row differs) at
// 1, 3 and the host's threads, in order and reversed: the same tokens.
TEST(SamplerRace, SameTokensForAnyThreadCountAndBatch) {
  const PluginInstance single = make_sampler(1, "race");
  for (const RaceRow& r : race_rows()) {
    SCOPED_TRACE(r.name);
    const auto vocab = static_cast<int32_t>(r.logits.size());
    std::vector<ts_sampler_row> batch;
    std::vector<int32_t> alone;
    for (uint64_t c = 0; c < 16; ++c) {
      batch.push_back(make_row(r.logits, r.params, c, &r.prompt, &r.output));
      std::vector<ts_sampler_result> one(1);
      ASSERT_EQ(call_sample(single, {batch.back()}, vocab, one).code, TS_OK);
      alone.push_back(one[0].token);
    }
    for (const int threads : {1, 3, 0}) {
      const PluginInstance sampler = make_sampler(threads, "race");
      std::vector<ts_sampler_result> results(batch.size());
      ASSERT_EQ(call_sample(sampler, batch, vocab, results).code, TS_OK);
      const std::vector<ts_sampler_row> reversed(batch.rbegin(), batch.rend());
      std::vector<ts_sampler_result> back(batch.size());
      ASSERT_EQ(call_sample(sampler, reversed, vocab, back).code, TS_OK);
      for (size_t i = 0; i < batch.size(); ++i) {
        EXPECT_EQ(results[i].token, alone[i]) << threads << " threads, row " << i;
        EXPECT_EQ(back[batch.size() - 1 - i].token, alone[i]) << threads << " threads, reversed";
      }
    }
  }
}

}  // namespace
}  // namespace tessera::sampler_test
