// The sampler's vectorised kernels (plugins/sampler/src/exp_weights.cpp, certified_top_p.cpp,
// compiled into this test). The exp is held to the error bound its certified decisions rely on:
// within kFastExpRelError of a double-precision exp wherever the result is a normal float, within
// kWeightAbsError below that, exactly 1 at 0 and 0 for removed (-inf) tokens; the block sums equal
// a plain double sum of the weights. The top-p heavy-weight pass gives the same tokens, mass and
// largest lighter weight in its AVX-512 and portable versions. The row scan (max, all finite) and
// the first index of a value agree with plain loops in both versions, at every tail length and
// wherever an inf or NaN sits.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "certified_top_p.hpp"
#include "exp_weights.hpp"
#include "row_scan.hpp"

namespace tessera::sampler {
namespace {

constexpr double kSmallestNormal = 0x1.0p-126;

struct Worst {
  double relative = 0.0;
  float at = 0.0f;
  int absolute_failures = 0;
};

// Every `stride`-th float exponent in [lowest, 0] (as bit patterns), through the row function with
// l_max = 0 and T = 1 (so the exponent is the logit itself).
Worst measure(float highest, float lowest, uint32_t stride) {
  const uint32_t first = std::bit_cast<uint32_t>(highest);
  const uint32_t last = std::bit_cast<uint32_t>(lowest);
  std::vector<float> logits, weights;
  BlockWeights sums;
  Worst worst;
  for (uint32_t bits = first; bits <= last;) {
    logits.clear();
    for (; bits <= last && logits.size() < 4096; bits += stride) {
      logits.push_back(std::bit_cast<float>(bits));
    }
    weights.resize(logits.size());
    fast_exp_weights(logits, 0.0f, 1.0f, weights, sums);
    for (size_t i = 0; i < logits.size(); ++i) {
      const double truth = std::exp(static_cast<double>(logits[i]));
      const double error = std::abs(static_cast<double>(weights[i]) - truth);
      if (truth < kSmallestNormal) {
        if (error > kWeightAbsError && ++worst.absolute_failures <= 5) {
          ADD_FAILURE() << "exp(" << logits[i] << ") = " << weights[i] << ", true " << truth;
        }
        continue;
      }
      const double relative = error / truth;
      if (relative > worst.relative) {
        worst.relative = relative;
        worst.at = logits[i];
      }
    }
  }
  return worst;
}

TEST(SamplerExpWeights, WithinTheCertifiedBoundOnSpreadExponents) {
  // ~17M exponents spread over the whole range where a weight is not 0 (and a bit below).
  const Worst worst = measure(-0.0f, -90.0f, 61);
  EXPECT_LE(worst.relative, kFastExpRelError) << "worst at exp(" << worst.at << ")";
  // The bound the certification assumes: ours + glibc's 0.502 ulp must stay under 2^-22.
  EXPECT_LT(kFastExpRelError + 0.502 * 0x1.0p-23, kWeightRelError);
  std::printf("worst relative error %.3g at exp(%.9g)\n", worst.relative, worst.at);
}

TEST(SamplerExpWeights, WithinTheCertifiedBoundOnTwoWholeBinades) {
  // Every float in [-2, -0.5]: where most weights of a flat row sit, and where the reduction
  // switches between k = 0, -1 and -2.
  const Worst worst = measure(-0.5f, -2.0f, 1);
  EXPECT_LE(worst.relative, kFastExpRelError) << "worst at exp(" << worst.at << ")";
}

TEST(SamplerExpWeights, ExactOneAtTheMaxAndZeroForRemovedTokens) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> logits = {3.5f, -inf, 3.5f, -1000.0f, 2.0f};
  std::vector<float> weights(logits.size());
  BlockWeights sums;
  fast_exp_weights(logits, 3.5f, 0.7f, weights, sums);
  EXPECT_EQ(weights[0], 1.0f);
  EXPECT_EQ(weights[1], 0.0f);
  EXPECT_EQ(weights[2], 1.0f);
  EXPECT_EQ(weights[3], 0.0f);
  const double truth = std::exp(static_cast<double>((2.0f - 3.5f) / 0.7f));
  EXPECT_NEAR(weights[4], truth, truth * kFastExpRelError);
}

TEST(SamplerExpWeights, BlockSumsAreTheWeightsSums) {
  std::vector<float> logits(1000);
  for (size_t i = 0; i < logits.size(); ++i) {
    logits[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 6.0);
  }
  std::vector<float> weights(logits.size());
  BlockWeights sums;
  fast_exp_weights(logits, 6.0f, 1.3f, weights, sums);
  ASSERT_EQ(sums.block_sums.size(), (logits.size() + kWeightBlock - 1) / kWeightBlock);
  double total = 0.0;
  for (size_t b = 0; b < sums.block_sums.size(); ++b) {
    double block = 0.0;
    for (size_t i = b * kWeightBlock; i < std::min(logits.size(), (b + 1) * kWeightBlock); ++i) {
      block += weights[i];
    }
    EXPECT_NEAR(sums.block_sums[b], block, 1e-12 * block) << "block " << b;
    total += block;
  }
  EXPECT_NEAR(sums.total, total, 1e-12 * total);
}

TEST(SamplerTopPHeavyPass, BothVersionsAgree) {
  for (const int n : {0, 5, 16, 17, 1000, 4096}) {
    std::vector<float> w(static_cast<size_t>(n));
    for (size_t i = 0; i < w.size(); ++i) {  // weights in (0, 1], about half of them >= kHeavy
      w[i] = static_cast<float>(std::exp(-20.0 * std::abs(std::sin(0.7 * static_cast<double>(i)))));
    }
    std::vector<float> a(w.size() + 16), b(w.size() + 16);
    const HeavyPass fast = heavy_weights(w.data(), n, kHeavy, a.data());
    const HeavyPass portable = heavy_weights_portable(w.data(), n, kHeavy, b.data());
    std::vector<float> expected;
    double mass = 0.0;
    float below = 0.0f;
    for (const float x : w) {
      if (x >= kHeavy) {
        expected.push_back(x);
        mass += x;
      } else {
        below = std::max(below, x);
      }
    }
    for (const HeavyPass* h : {&fast, &portable}) {
      const std::vector<float>& out = h == &fast ? a : b;
      ASSERT_EQ(h->count, static_cast<int64_t>(expected.size())) << "n " << n;
      EXPECT_TRUE(std::equal(expected.begin(), expected.end(), out.begin())) << "n " << n;
      EXPECT_NEAR(h->mass, mass, 1e-12 * mass) << "n " << n;
      EXPECT_EQ(h->max_below, below) << "n " << n;
    }
  }
}

// Plain loops: the largest value (NaN-free rows) and whether every value is finite.
RowScan plain_scan(const std::vector<float>& v) {
  RowScan r{-std::numeric_limits<float>::infinity(), true};
  for (const float x : v) {
    r.all_finite = r.all_finite && std::isfinite(x);
    if (!std::isnan(x)) {
      r.max = std::max(r.max, x);
    }
  }
  return r;
}

TEST(SamplerRowScan, BothVersionsAgreeWithPlainLoops) {
  const float bad_values[] = {
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
      std::numeric_limits<float>::max()};  // the last one is finite
  int checked = 0;
  for (int n = 1; n <= 200; n += (n < 70 ? 1 : 13)) {
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) {  // negative and positive, max somewhere inside
      v[i] = static_cast<float>(5.0 * std::sin(1.3 * static_cast<double>(i * i + n)));
    }
    const auto check = [&](const std::vector<float>& row, const char* what, int at) {
      const RowScan expected = plain_scan(row);
      for (const RowScan got : {scan_row(row), scan_row_portable(row)}) {
        ASSERT_EQ(got.all_finite, expected.all_finite) << what << " at " << at << ", n " << n;
        if (expected.all_finite) {
          ASSERT_EQ(got.max, expected.max) << what << " at " << at << ", n " << n;
        }
      }
      if (!expected.all_finite) {
        return;
      }
      const auto first =
          static_cast<int32_t>(std::find(row.begin(), row.end(), expected.max) - row.begin());
      ASSERT_EQ(first_index_of(row, expected.max), first) << what << ", n " << n;
      ASSERT_EQ(first_index_of_portable(row, expected.max), first) << what << ", n " << n;
      ASSERT_EQ(first_index_of(row, 1234.5f), -1) << what << ", n " << n;
      ++checked;
    };
    check(v, "clean row", -1);
    for (const int at : {0, n / 2, n - 1}) {
      for (const float bad : bad_values) {
        std::vector<float> w = v;
        w[static_cast<size_t>(at)] = bad;
        check(w, "one special value", at);
      }
      std::vector<float> ties = v;  // the max twice: the lower index wins
      ties[static_cast<size_t>(at)] = 7.0f;
      ties[static_cast<size_t>(n - 1)] = 7.0f;
      check(ties, "tied maxima", at);
    }
  }
  EXPECT_GT(checked, 500);
}

}  // namespace
}  // namespace tessera::sampler
