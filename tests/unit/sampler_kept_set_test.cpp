// Top-p and min-p by rejection (plugins/sampler/src/kept_set.*, the default draw of a row without
// top-k): docs/sampler.md "Top-p and min-p by rejection" defines which proposals such a row keeps;
// this file writes that definition out (the 16 double lanes in column order, their fixed tree,
// A_j < fl(p W), the min-p weight) on top of the rejection draw's reference and compares token for
// token: flat and peaked rows of every size (a peaked row's proposals are mostly kept from a few
// blocks' sums, a flat row's from every block), partial blocks, penalties, ties at the boundary
// and rows whose boundary is an exact equality A_j = fl(p W). Then the draws against the exact
// truncated softmax, which must also tell apart the untruncated one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "rejection_reference.hpp"
#include "sampler_harness.hpp"

namespace tessera::sampler_test {
namespace {

// The documented kept set of a row (l: the logits drawn from, penalised when penalties apply).
bool reference_keeps(const std::vector<float>& l, float t, float top_p, float min_p, size_t j) {
  const float l_max = *std::max_element(l.begin(), l.end());
  const float e_j = reference_fma_exp(l[j], l_max, t);
  if (static_cast<double>(e_j) <
      static_cast<double>(min_p) * static_cast<double>(reference_fma_exp(l_max, l_max, t))) {
    return false;
  }
  if (top_p >= 1.0f) {
    return true;
  }
  double all[16] = {}, above[16] = {};
  for (size_t c = 0; c < l.size(); ++c) {
    const double w = reference_fma_exp(l[c], l_max, t);
    all[c % 16] += w;
    if (l[c] > l[j]) {
      above[c % 16] += w;
    }
  }
  const auto tree = [](const double* v) {
    return (((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]))) +
           (((v[8] + v[9]) + (v[10] + v[11])) + ((v[12] + v[13]) + (v[14] + v[15])));
  };
  const double threshold = static_cast<double>(top_p) * tree(all);
  return tree(above) < threshold;
}

int32_t reference_token(const std::vector<float>& l, const ts_sampling_params& p,
                        uint64_t counter) {
  return reference_rejection(l, p.temperature, p.seed, counter, [&](size_t j) {
    return reference_keeps(l, p.temperature, p.top_p, p.min_p, j);
  });
}

// One batch of rows through the plugin, each compared with the definition.
void expect_documented_tokens(const std::vector<std::vector<float>>& logits,
                              const std::vector<ts_sampling_params>& params,
                              const std::string& what) {
  SCOPED_TRACE(what);
  const PluginInstance sampler = make_sampler(2);
  const std::vector<int32_t> prompt = {1, 2, 3}, output = {3, 4, 4};
  std::vector<ts_sampler_row> rows;
  for (size_t i = 0; i < logits.size(); ++i) {
    rows.push_back(make_row(logits[i], params[i], 7 * i + 1, &prompt, &output));
  }
  std::vector<ts_sampler_result> results(rows.size());
  const auto vocab = static_cast<int32_t>(logits.front().size());
  ASSERT_EQ(call_sample(sampler, rows, vocab, results).code, TS_OK);
  for (size_t i = 0; i < rows.size(); ++i) {
    const ts_sampling_params& p = params[i];
    std::vector<float> l = logits[i];
    if (p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f) {
      const auto penalised = reference_penalised(l, p, prompt, output);
      for (size_t c = 0; c < l.size(); ++c) {
        l[c] = static_cast<float>(penalised[c]);
      }
    }
    ASSERT_EQ(results[i].token, reference_token(l, p, rows[i].rng_counter))
        << "row " << i << " vocab " << vocab << " T " << p.temperature << " top_p " << p.top_p
        << " min_p " << p.min_p;
  }
}

// One row `copies` times, seeds first_seed, first_seed + 1, ...
void expect_documented_tokens_of(const std::vector<float>& row, const ts_sampling_params& p,
                                 size_t copies, uint64_t first_seed, const std::string& what) {
  std::vector<ts_sampling_params> params(copies, p);
  for (size_t i = 0; i < copies; ++i) {
    params[i].seed = first_seed + i;
  }
  expect_documented_tokens(std::vector<std::vector<float>>(copies, row), params, what);
}

TEST(SamplerKeptSet, SameTokensAsTheDocumentedDefinition) {
  std::mt19937_64 rng(41);
  const float top_ps[] = {0.5f, 0.9f, 0.95f, 0.99f, 1.0f};
  for (const size_t vocab : {5, 300, 1000, 16384}) {
    for (const float std_dev : {0.3f, 1.0f, 4.0f, 8.0f}) {
      std::vector<std::vector<float>> logits;
      std::vector<ts_sampling_params> params;
      for (int i = 0; i < 30; ++i) {
        logits.push_back(gaussian_row(rng, vocab, std_dev));
        ts_sampling_params p = plain_params(rng());
        p.temperature = i % 3 == 0 ? 0.6f : (i % 3 == 1 ? 1.0f : 1.4f);
        p.top_p = top_ps[i % 5];
        p.min_p = i % 4 == 1 ? 0.05f : (i % 7 == 2 ? 0.5f : 0.0f);
        if (p.top_p == 1.0f && p.min_p == 0.0f) {
          p.min_p = 0.01f;  // every row here is truncated
        }
        if (i % 6 == 5) {
          p.repetition_penalty = 1.3f;
          p.presence_penalty = 0.5f;
        }
        params.push_back(p);
      }
      expect_documented_tokens(
          logits, params, "vocab " + std::to_string(vocab) + " std " + std::to_string(std_dev));
    }
  }
}

// A 129280-token row (DeepSeek-V4's vocabulary), flat and peaked.
TEST(SamplerKeptSet, FullVocabularyRowsGiveTheDocumentedTokens) {
  std::mt19937_64 rng(43);
  std::vector<std::vector<float>> logits;
  std::vector<ts_sampling_params> params;
  for (int i = 0; i < 6; ++i) {
    logits.push_back(gaussian_row(rng, 129280, i < 3 ? 1.0f : 6.0f));
    ts_sampling_params p = plain_params(rng());
    p.temperature = i % 2 == 0 ? 0.6f : 1.0f;
    p.top_p = 0.95f;
    params.push_back(p);
  }
  expect_documented_tokens(logits, params, "129280");
}

// The weight e(y) of logit y against a max of 0 at T = 1 that is exactly 1/2: found near -ln 2.
float logit_of_half() {
  float y = -0.6931472f;
  for (int i = 0; i < 64 && reference_fma_exp(y, 0.0f, 1.0f) != 0.5f; ++i) {
    y = std::nextafter(y, reference_fma_exp(y, 0.0f, 1.0f) > 0.5f ? -1.0f : 0.0f);
  }
  return y;
}

// Ties and exact equalities at the boundary, where one rounding either way changes the set:
// equal logits are kept or dropped together; weights 1, 1/2, 1/2 with top_p = 1/2 give
// A = 1 = fl(p W) for the halves (dropped: only the max is drawn), and with the next float above
// 1/2 they are kept.
TEST(SamplerKeptSet, TiesAndExactBoundariesFollowTheDefinition) {
  const float half = logit_of_half();
  ASSERT_EQ(reference_fma_exp(half, 0.0f, 1.0f), 0.5f);
  std::vector<std::vector<float>> logits;
  std::vector<ts_sampling_params> params;
  const std::vector<float> exact = {0.0f, half, half};
  for (int i = 0; i < 40; ++i) {
    ts_sampling_params p = plain_params(100 + i);
    p.top_p = i % 2 == 0 ? 0.5f : std::nextafter(0.5f, 1.0f);
    logits.push_back(exact);
    params.push_back(p);
  }
  expect_documented_tokens(logits, params, "weights 1, 1/2, 1/2");
  const PluginInstance sampler = make_sampler(1);
  ts_sampling_params p = plain_params(5);
  p.top_p = 0.5f;
  for (const int32_t t : draw_tokens(sampler, exact, p, 500)) {
    ASSERT_EQ(t, 0);
  }
  p.top_p = std::nextafter(0.5f, 1.0f);
  const auto counts = histogram(draw_tokens(sampler, exact, p, 4000), 3);
  EXPECT_GT(counts[1], 700);  // each half drawn ~1000 times in 4000
  EXPECT_GT(counts[2], 700);

  // Eight equal maxima among 1000 tokens, top_p 0.3 well inside their mass: all eight kept.
  std::mt19937_64 rng(47);
  logits.clear();
  params.clear();
  for (int i = 0; i < 24; ++i) {
    std::vector<float> l = gaussian_row(rng, 1000, 0.5f);
    for (const size_t c : {3, 19, 300, 301, 512, 700, 998, 999}) {
      l[c] = 6.0f;
    }
    logits.push_back(l);
    ts_sampling_params q = plain_params(rng());
    q.top_p = i % 2 == 0 ? 0.3f : 0.9f;
    params.push_back(q);
  }
  expect_documented_tokens(logits, params, "eight equal maxima");

  // A runner-up just below the max, with top_p under the max's own probability (~11%): only the
  // max is kept, however close the runner-up.
  logits.clear();
  params.clear();
  for (int i = 0; i < 24; ++i) {
    std::vector<float> l = gaussian_row(rng, 1000, 0.3f);
    l[400] = 5.0f;
    l[401 + i] = 4.99f;
    logits.push_back(l);
    ts_sampling_params q = plain_params(rng());
    q.top_p = 0.05f;
    params.push_back(q);
  }
  expect_documented_tokens(logits, params, "a runner-up just below the max");
  for (const int32_t t : draw_tokens(sampler, logits.front(), params.front(), 200)) {
    ASSERT_EQ(t, 400);
  }
}

// A flat row whose proposals the weights' upper bounds decide first (kept_set.hpp: the bounds
// are up to 6.25% above the weights, most where y log2 e is 0.44 past an integer, least at an
// integer). Above the candidates, weights 1/2 (bounds tight); below them, weights 2^-2.56 (bounds
// 6.1% high): the bounds' W is inflated more than their A, so A / W = 0.417 at the candidates while
// the bounds' ratio is 0.403. With top_p = 0.41 the candidates are dropped; a bound test that
// forgot the factor between bounds and weights would keep them.
TEST(SamplerKeptSet, TheBoundsKeepNothingTheWeightsDrop) {
  std::vector<float> row;
  row.push_back(0.0f);                                // the max, weight 1
  row.insert(row.end(), 100, -0.6931472f);            // weights 1/2: A of a candidate = 51
  row.insert(row.end(), 10, -1.2f);                   // the candidates, weight 0.301
  row.insert(row.end(), 401, -2.5573f * 0.6931472f);  // weights 0.170, bounds 6.1% above them
  std::mt19937_64 rng(59);
  std::shuffle(row.begin(), row.end(), rng);  // every block holds a logit above the candidates
  ts_sampling_params p = plain_params(3);
  p.top_p = 0.41f;
  expect_documented_tokens_of(row, p, 24, 1000, "bounds loose below the candidates");
  const PluginInstance sampler = make_sampler(1);
  for (const int32_t t : draw_tokens(sampler, row, p, 3000)) {
    ASSERT_GT(row[static_cast<size_t>(t)], -1.0f)
        << "token " << t << " (logit " << row[t] << ") is outside the nucleus";
  }
  int candidates_kept = 0;
  for (size_t c = 0; c < row.size(); ++c) {
    candidates_kept += row[c] == -1.2f && reference_keeps(row, 1.0f, 0.41f, 0.0f, c) ? 1 : 0;
  }
  EXPECT_EQ(candidates_kept, 0);  // the definition drops them
  EXPECT_TRUE(reference_keeps(row, 1.0f, 0.43f, 0.0f,
                              static_cast<size_t>(std::find(row.begin(), row.end(), -1.2f) -
                                                  row.begin())));  // and keeps them at 0.43
}

// A proposal kept only because of the blocks below it (kept_set.hpp: a peaked row's blocks above
// the proposal give W' <= W; the envelope's bounds U of the others give W <= W' + U, which drops
// it when A >= p (W' + U)). Block 0: the max (weight 1) and 255 weights 0.774; block 1: 256 tied
// proposals of weight 0.3; blocks 2 and 3: 512 weights 1/4, whose groups' bounds are tight (all
// equal, y log2 e = -2: the chord touches). With top_p = 1/2, A = 198.4 at the proposals,
// p W' = 137.6 and p W = 201.6: kept. A drop test that used 0.9 U (or left U out) would drop them.
TEST(SamplerKeptSet, TheBlocksBelowAProposalCanKeepIt) {
  std::vector<float> row(1024, -1.3862944f);  // 1/4: blocks 2 and 3
  row[0] = 0.0f;
  std::fill(row.begin() + 1, row.begin() + 256, -0.2562f);    // 0.774
  std::fill(row.begin() + 256, row.begin() + 512, -1.2040f);  // 0.300
  ts_sampling_params p = plain_params(3);
  p.top_p = 0.5f;
  expect_documented_tokens_of(row, p, 40, 2000, "kept by the blocks below");
  EXPECT_TRUE(reference_keeps(row, 1.0f, 0.5f, 0.0f, 300));
  EXPECT_FALSE(reference_keeps(row, 1.0f, 0.5f, 0.0f, 600));
  const PluginInstance sampler = make_sampler(1);
  const auto counts = histogram(draw_tokens(sampler, row, p, 4000), row.size());
  int64_t proposals_kept = 0;
  for (size_t c = 256; c < 512; ++c) {
    proposals_kept += counts[c];
  }
  EXPECT_GT(proposals_kept, 500);  // 76.8 / 275.2 of the kept mass: ~1100 of 4000
}

// 200k draws against the exact truncated softmax (sampler_harness.hpp's sort-based reference);
// the untruncated softmax must be rejected.
void expect_fits_truncated(const std::vector<float>& logits, const ts_sampling_params& p) {
  const PluginInstance sampler = make_sampler(2);
  const auto observed = histogram(draw_tokens(sampler, logits, p, 200000), logits.size());
  const std::vector<int32_t> none;
  const auto raw = reference_penalised(logits, p, none, none);
  const ChiSquare c = chi_square(observed, reference_distribution(raw, p));
  EXPECT_LT(c.statistic, chi_square_critical_1e4(c.degrees_of_freedom))
      << "vocab " << logits.size() << " top_p " << p.top_p << " min_p " << p.min_p;
  ts_sampling_params untruncated = p;
  untruncated.top_p = 1.0f;
  untruncated.min_p = 0.0f;
  const ChiSquare u = chi_square(observed, reference_distribution(raw, untruncated));
  EXPECT_GT(u.statistic, chi_square_critical_1e4(u.degrees_of_freedom))
      << "the untruncated softmax was not told apart, vocab " << logits.size();
}

TEST(SamplerKeptSet, DrawsFitTheTruncatedSoftmax) {
  std::mt19937_64 rng(53);
  ts_sampling_params p = plain_params(1);
  p.top_p = 0.8f;
  expect_fits_truncated(gaussian_row(rng, 1024, 1.0f), p);  // flat: every block summed
  std::vector<float> peaked = gaussian_row(rng, 2000, 1.0f);
  peaked[1900] = 6.0f;
  peaked[3] = 5.5f;
  peaked[700] = 5.0f;
  p.temperature = 0.8f;
  p.top_p = 0.9f;
  expect_fits_truncated(peaked, p);  // peaked: most proposals kept from a few blocks
  p.top_p = 1.0f;
  p.min_p = 0.1f;
  expect_fits_truncated(peaked, p);
  p.top_p = 0.95f;
  p.min_p = 0.02f;
  expect_fits_truncated(gaussian_row(rng, 300, 2.0f), p);
}

}  // namespace
}  // namespace tessera::sampler_test
