// The sampler's vectorised inverse-CDF path (plugins/sampler/src/exp_weights.*, certified_draw.*:
// truncated rows, and every temperature row with the option draw = "inverse_cdf", which these
// token-for-token tests set) must draw exactly the token the scalar path draws for the same seed
// and counter: libm expf per
// token, a double running sum in token order, the first token whose cumulative weight exceeds
// u * total (docs/sampler.md). This file re-implements that scalar path independently (and the
// documented SplitMix64 counter stream) and compares token for token:
//   - on many random rows of a 16k vocabulary, with penalties, top-k and min-p;
//   - on constructed close calls, where the draw sits within one float step of a token boundary,
//     built from exponents whose exp lies within 0.2% of an ulp of a float rounding midpoint, so
//     any exp that differs from libm's in the last bit changes the token unless the plugin
//     certifies its decision (or recomputes it);
//   - min-p thresholds equal to a token's exact weight (kept, by "w < min_p drops").
// Plus chi-square checks of large-vocabulary draws against the exact softmax, top_p = 1 and < 1,
// with either draw.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "sampler_harness.hpp"

namespace tessera::sampler_test {
namespace {

// The scalar path on penalty-free logits: top-k by the k-th largest value (ties kept), weights
// expf((l - max) / T) in float, top-p as "walking the weights from the largest down, the first
// whose cumulative mass reaches top_p * total is the boundary; w < boundary drops" (by a full
// sort), min-p as "w < min_p drops", inverse CDF in token order.
int32_t scalar_reference(const std::vector<float>& logits, const ts_sampling_params& p,
                         uint64_t counter) {
  std::vector<float> l = logits;
  const auto vocab = static_cast<int32_t>(l.size());
  if (p.top_k > 0 && p.top_k < vocab) {
    std::vector<float> sorted = l;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const float kth = sorted[static_cast<size_t>(p.top_k - 1)];
    for (float& x : l)
      if (x < kth) x = -std::numeric_limits<float>::infinity();
  }
  const float l_max = *std::max_element(l.begin(), l.end());
  std::vector<float> w(l.size());
  for (size_t i = 0; i < l.size(); ++i)
    w[i] = std::isinf(l[i]) ? 0.0f : std::exp((l[i] - l_max) / p.temperature);
  if (p.top_p < 1.0f) {
    double mass = 0.0;
    for (const float x : w) mass += x;
    std::vector<float> sorted = w;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    double cumulative = 0.0;
    float boundary = 0.0f;
    for (size_t i = 0; i < sorted.size();) {
      size_t j = i;  // equal weights count together
      for (; j < sorted.size() && sorted[j] == sorted[i]; ++j) cumulative += sorted[j];
      if (cumulative >= p.top_p * mass) {
        boundary = sorted[i];
        break;
      }
      i = j;
    }
    for (float& x : w)
      if (x < boundary) x = 0.0f;
  }
  for (float& x : w)
    if (p.min_p > 0.0f && x < p.min_p) x = 0.0f;
  double total = 0.0;
  for (const float x : w) total += x;
  const double target = reference_uniform(p.seed, counter) * total;
  double cumulative = 0.0;
  int32_t last = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] <= 0.0f) continue;
    cumulative += w[i];
    last = static_cast<int32_t>(i);
    if (cumulative > target) return last;
  }
  return last;
}

// Floats x in [lo, hi) whose exp lies within `closeness` ulp of the midpoint between two floats:
// the exponents on which two accurate exp implementations are most likely to round apart.
std::vector<float> hard_exponents(float lo, float hi, size_t count, double closeness,
                                  uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> pick(lo, hi);
  std::vector<float> out;
  while (out.size() < count) {
    const float x = pick(rng);
    const long double y = std::exp(static_cast<long double>(x));
    const auto below = static_cast<float>(y);  // nearest; step to the float below y if needed
    const float f = static_cast<long double>(below) <= y ? below : std::nextafter(below, 0.0f);
    const long double ulp = static_cast<long double>(std::nextafter(f, 1.0f)) - f;
    const long double fraction = (y - f) / ulp;
    if (std::fabs(static_cast<double>(fraction) - 0.5) < closeness) out.push_back(x);
  }
  return out;
}

std::vector<int32_t> plugin_tokens(const PluginInstance& sampler,
                                   const std::vector<std::vector<float>>& rows,
                                   const std::vector<ts_sampling_params>& params,
                                   const std::vector<uint64_t>& counters) {
  std::vector<ts_sampler_row> batch;
  for (size_t i = 0; i < rows.size(); ++i)
    batch.push_back(make_row(rows[i], params[i], counters[i]));
  ResultBuffers out(batch.size(), 0);
  const ts_status s =
      call_sample(sampler, batch, static_cast<int32_t>(rows[0].size()), out.results);
  EXPECT_EQ(s.code, TS_OK) << (s.message ? s.message : "");
  std::vector<int32_t> tokens;
  for (const auto& r : out.results) tokens.push_back(r.token);
  return tokens;
}

// n random rows of `vocab` N(0, scale^2) logits, each with its own seed and counter; `base` gives
// the sampling settings. Every tenth row copies logit 0 somewhere (a tie) when `ties` is set.
ts_sampling_params sampling(float temperature, float top_p, float min_p, int32_t top_k) {
  ts_sampling_params p = plain_params(0);
  p.temperature = temperature;
  p.top_p = top_p;
  p.min_p = min_p;
  p.top_k = top_k;
  return p;
}

struct RandomRows {
  std::vector<std::vector<float>> rows;
  std::vector<ts_sampling_params> params;
  std::vector<uint64_t> counters;
};
RandomRows random_rows(std::mt19937_64& rng, int32_t vocab, int n, float scale,
                       const ts_sampling_params& base, bool ties) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  RandomRows out;
  for (int r = 0; r < n; ++r) {
    std::vector<float> l(static_cast<size_t>(vocab));
    for (float& x : l) x = scale * normal(rng);
    if (ties && r % 10 == 0) l[static_cast<size_t>(r) % l.size()] = l[0];
    out.rows.push_back(std::move(l));
    ts_sampling_params p = plain_params(rng());
    p.temperature = base.temperature;
    p.top_p = base.top_p;
    p.min_p = base.min_p;
    p.top_k = base.top_k;
    out.params.push_back(p);
    out.counters.push_back(rng() % 1000);
  }
  return out;
}

TEST(SamplerFastPath, SameTokensAsTheScalarPathOnRandomRows) {
  constexpr int32_t kVocab = 16384;
  const PluginInstance sampler = make_sampler(2, "inverse_cdf");
  std::mt19937_64 rng(42);
  struct Setting {
    float temperature, scale, min_p;
    int32_t top_k;
  };
  // Flat rows (scale 0.3: every token matters) to peaked ones; min-p and top-k on the fast path.
  const Setting settings[] = {{1.0f, 0.3f, 0.0f, 0},   {0.7f, 2.0f, 0.0f, 0},
                              {1.3f, 1.0f, 0.05f, 0},  {1.0f, 1.0f, 0.0f, 200},
                              {0.8f, 4.0f, 0.01f, 50}, {1e-3f, 1.0f, 0.0f, 0}};
  int rows_checked = 0;
  for (const Setting& s : settings) {
    const ts_sampling_params base = sampling(s.temperature, 1.0f, s.min_p, s.top_k);
    const auto [rows, params, counters] = random_rows(rng, kVocab, 150, s.scale, base, false);
    const auto tokens = plugin_tokens(sampler, rows, params, counters);
    for (size_t i = 0; i < rows.size(); ++i) {
      ASSERT_EQ(tokens[i], scalar_reference(rows[i], params[i], counters[i]))
          << "T " << s.temperature << " scale " << s.scale << " min_p " << s.min_p << " top_k "
          << s.top_k << " row " << i;
      ++rows_checked;
    }
  }
  EXPECT_EQ(rows_checked, 900);
}

// Top-p rows take the vectorised path too (certified_top_p.*): the kept set and the draw must be
// the scalar path's, on flat rows (most of a 16k vocabulary in the nucleus) and peaked ones, with
// top-k and min-p on top, and on a small and a DeepSeek-size vocabulary.
TEST(SamplerFastPath, TopPSameTokensAsTheScalarPath) {
  const PluginInstance sampler = make_sampler(2, "inverse_cdf");
  std::mt19937_64 rng(7);
  struct Setting {
    int32_t vocab;
    float temperature, scale, top_p, min_p;
    int32_t top_k;
  };
  const Setting settings[] = {
      {16384, 1.0f, 0.3f, 0.95f, 0.0f, 0},  {16384, 0.6f, 1.0f, 0.95f, 0.0f, 0},
      {16384, 1.0f, 3.0f, 0.9f, 0.0f, 0},   {16384, 1.3f, 1.0f, 0.5f, 0.02f, 0},
      {16384, 0.8f, 2.0f, 0.99f, 0.0f, 40}, {512, 1.0f, 1.0f, 0.95f, 0.0f, 0},
      {129280, 1.0f, 2.0f, 0.95f, 0.0f, 0}};
  int rows_checked = 0;
  for (const Setting& s : settings) {
    const ts_sampling_params base = sampling(s.temperature, s.top_p, s.min_p, s.top_k);
    const int n_rows = s.vocab > 20000 ? 20 : 150;
    const auto [rows, params, counters] = random_rows(rng, s.vocab, n_rows, s.scale, base, true);
    const auto tokens = plugin_tokens(sampler, rows, params, counters);
    for (size_t i = 0; i < rows.size(); ++i) {
      ASSERT_EQ(tokens[i], scalar_reference(rows[i], params[i], counters[i]))
          << "vocab " << s.vocab << " T " << s.temperature << " scale " << s.scale << " top_p "
          << s.top_p << " min_p " << s.min_p << " top_k " << s.top_k << " row " << i;
      ++rows_checked;
    }
  }
  EXPECT_EQ(rows_checked, 6 * 150 + 20);
}

TEST(SamplerFastPath, SameTokensAsTheScalarPathOnCloseCalls) {
  // Row: [tuning token, 255 fillers with hard exponents, a maximum at 0 (weight exactly 1)].
  // Raising the tuning logit moves every cumulative weight up faster than the target, so the
  // drawn token can only move down; bisecting on the tuning logit's bit pattern finds the float
  // at which it changes. Both sides of that step are decided by less than one float step.
  constexpr size_t kFillers = 255;
  const std::vector<float> fillers = hard_exponents(-6.0f, -0.05f, 40 * kFillers, 0.002, 7);
  const PluginInstance sampler = make_sampler(1, "inverse_cdf");
  std::mt19937_64 rng(9);
  std::vector<std::vector<float>> rows;
  std::vector<ts_sampling_params> params;
  std::vector<uint64_t> counters;
  std::vector<int32_t> expected;
  for (int r = 0; r < 1500; ++r) {
    std::vector<float> l(kFillers + 2, 0.0f);
    for (size_t i = 0; i < kFillers; ++i) l[1 + i] = fillers[rng() % fillers.size()];
    ts_sampling_params p = plain_params(rng());
    const uint64_t counter = rng() % 100;
    // Bisect over the ordered bit patterns of negative floats in [-30, -1e-3].
    auto token_at = [&](uint32_t bits) {
      l[0] = -std::bit_cast<float>(bits);
      return scalar_reference(l, p, counter);
    };
    uint32_t lo = std::bit_cast<uint32_t>(1e-3f), hi = std::bit_cast<uint32_t>(30.0f);
    if (token_at(lo) == token_at(hi)) continue;  // the draw never moves for this u
    while (hi - lo > 1) {
      const uint32_t mid = lo + (hi - lo) / 2;
      (token_at(mid) == token_at(lo) ? lo : hi) = mid;
    }
    for (const uint32_t bits : {lo, hi}) {
      l[0] = -std::bit_cast<float>(bits);
      rows.push_back(l);
      params.push_back(p);
      counters.push_back(counter);
      expected.push_back(scalar_reference(l, p, counter));
    }
  }
  ASSERT_GT(rows.size(), 1000u);
  const auto tokens = plugin_tokens(sampler, rows, params, counters);
  int mismatches = 0;
  for (size_t i = 0; i < rows.size(); ++i) mismatches += tokens[i] != expected[i];
  EXPECT_EQ(mismatches, 0) << "of " << rows.size() << " close calls";
}

TEST(SamplerFastPath, MinPEqualToATokensWeightKeepsIt) {
  // Two tokens: the maximum (weight 1) and x, with min_p = expf(x) exactly: "w < min_p drops"
  // keeps x, so it must be drawn with probability w / (1 + w) — and on the same counters as the
  // scalar path.
  const std::vector<float> xs = hard_exponents(-2.0f, -0.01f, 3000, 0.002, 11);
  const PluginInstance sampler = make_sampler(1, "inverse_cdf");
  std::vector<std::vector<float>> rows;
  std::vector<ts_sampling_params> params;
  std::vector<uint64_t> counters;
  for (size_t i = 0; i < xs.size(); ++i) {
    rows.push_back({0.0f, xs[i]});
    ts_sampling_params p = plain_params(i);
    p.min_p = std::exp(xs[i]);
    params.push_back(p);
    counters.push_back(i);
  }
  const auto tokens = plugin_tokens(sampler, rows, params, counters);
  int drawn = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(tokens[i], scalar_reference(rows[i], params[i], counters[i])) << "x " << xs[i];
    drawn += tokens[i] == 1;
  }
  EXPECT_GT(drawn, 100);  // mean weight ~0.4: about 30% of the rows draw the second token
}

// 200k draws from a 1024-token row (many 64-token blocks) against the exact distribution.
void expect_large_vocab_fits(const ts_sampling_params& p, int threads, const std::string& draw) {
  constexpr int32_t kVocab = 1024;
  constexpr int64_t kDraws = 200000;
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> logits(kVocab);
  for (float& x : logits) x = normal(rng);
  logits[700] = 4.0f;  // a few heavy tokens in the middle of the row
  logits[3] = 3.5f;
  const PluginInstance sampler = make_sampler(threads, draw);
  const auto observed = histogram(draw_tokens(sampler, logits, p, kDraws), kVocab);
  const auto exact = reference_distribution(reference_penalised(logits, p, {}, {}), p);
  for (int32_t i = 0; i < kVocab; ++i)
    if (exact[i] == 0.0) ASSERT_EQ(observed[i], 0) << "token " << i << " is outside the kept set";
  const ChiSquare c = chi_square(observed, exact);
  EXPECT_LT(c.statistic, chi_square_critical_1e4(c.degrees_of_freedom))
      << "df " << c.degrees_of_freedom;
  ts_sampling_params hotter = p;  // the statistic must be able to tell a 5% change of T
  hotter.temperature *= 1.05f;
  const ChiSquare h =
      chi_square(observed, reference_distribution(reference_penalised(logits, p, {}, {}), hotter));
  EXPECT_GT(h.statistic, chi_square_critical_1e4(h.degrees_of_freedom));
}

TEST(SamplerFastPath, LargeVocabularyDrawsFitTheSoftmax) {
  ts_sampling_params p = plain_params(21);
  p.temperature = 0.9f;
  expect_large_vocab_fits(p, 2, "inverse_cdf");
  expect_large_vocab_fits(p, 2, "rejection");
}

TEST(SamplerFastPath, LargeVocabularyNucleusDrawsFitTheTruncatedSoftmax) {
  ts_sampling_params p = plain_params(22);
  p.temperature = 1.1f;
  p.top_p = 0.7f;
  expect_large_vocab_fits(p, 2, "inverse_cdf");
}

}  // namespace
}  // namespace tessera::sampler_test
