// The sampler's vectorised kernels (plugins/sampler/src/exp_weights.cpp, certified_top_p.cpp,
// compiled into this test). The exp is held to the error bound its certified decisions rely on:
// within kFastExpRelError of a double-precision exp wherever the result is a normal float, within
// kWeightAbsError below that, exactly 1 at 0 and 0 for removed (-inf) tokens; the block sums equal
// a plain double sum of the weights. The top-p heavy-weight pass gives the same tokens, mass and
// largest lighter weight in every version the CPU runs (AVX-512 or AVX2, portable) as a plain loop,
// and so does the copy of one histogram bucket's weights. The row scan (max, all finite) and the
// first index of a value agree with plain loops in both versions, at every tail length and wherever
// an inf or NaN sits. The rejection draw's exp (fma_exp.cpp) gives the bits of a scalar fma
// evaluation on the running CPU's clone and is as accurate; the group maxima (group_scan.cpp) are
// those of a plain loop over the documented grouping, at every block tail.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include "certified_top_p.hpp"
#include "compress_avx2.hpp"
#include "exp_weights.hpp"
#include "fma_exp.hpp"
#include "fma_exp_reference.hpp"
#include "group_scan.hpp"
#include "row_scan.hpp"
#include "target_clones.hpp"

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

// Weights in (0, 1], about half of them >= kHeavy, in no order (a flat row's coin tosses).
std::vector<float> mixed_weights(int n) {
  std::vector<float> w(static_cast<size_t>(n));
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = static_cast<float>(std::exp(-20.0 * std::abs(std::sin(0.7 * static_cast<double>(i)))));
  }
  return w;
}

TEST(SamplerTopPHeavyPass, EveryVersionAgreesWithAPlainLoop) {
  using Pass = HeavyPass (*)(const float*, int64_t, float, float*, int32_t*, int64_t);
  std::vector<std::pair<const char*, Pass>> versions = {{"dispatched", heavy_weights},
                                                        {"portable", heavy_weights_portable}};
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) {
    versions.emplace_back("avx2", heavy_weights_avx2);
  }
#endif
  // The mixed rows, and peaked ones: a heavy weight every 700 columns, each alone in its vector.
  std::vector<std::vector<float>> rows;
  for (const int n : {0, 5, 7, 8, 16, 17, 1000, 4096, 4099}) {
    rows.push_back(mixed_weights(n));
    std::vector<float> peaked(static_cast<size_t>(n), 0x1.0p-20f);
    for (size_t i = 3; i < peaked.size(); i += 700) {
      peaked[i] = 0.5f;
    }
    rows.push_back(std::move(peaked));
  }
  for (const std::vector<float>& w : rows) {
    const auto n = static_cast<int64_t>(w.size());
    std::vector<float> expected;
    std::vector<int32_t> expected_columns;
    double mass = 0.0;
    float below = 0.0f;
    for (size_t i = 0; i < w.size(); ++i) {
      if (w[i] >= kHeavy) {
        expected.push_back(w[i]);
        expected_columns.push_back(static_cast<int32_t>(i));
        mass += w[i];
      } else {
        below = std::max(below, w[i]);
      }
    }
    // Columns are promised whenever count <= column_limit: the whole row, and the limit met
    // exactly (the last stores are the ones a limit test off by one would drop).
    const auto count = static_cast<int64_t>(expected.size());
    for (const int64_t limit : {static_cast<int64_t>(n), count}) {
      for (const auto& [name, pass] : versions) {
        std::vector<float> out(w.size() + 16, -1.0f);
        std::vector<int32_t> columns(w.size() + 16, -1);
        const HeavyPass h = pass(w.data(), n, kHeavy, out.data(), columns.data(), limit);
        ASSERT_EQ(h.count, count) << name << ", n " << n;
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(), out.begin()))
            << name << ", n " << n;
        EXPECT_TRUE(std::equal(expected_columns.begin(), expected_columns.end(), columns.begin()))
            << name << ", n " << n << ", column limit " << limit << ": columns";
        EXPECT_NEAR(h.mass, mass, 1e-12 * mass) << name << ", n " << n;
        EXPECT_EQ(h.max_below, below) << name << ", n " << n;
      }
    }
  }
}

TEST(SamplerTopPBucketCopy, EveryVersionAgreesWithAPlainLoop) {
  using Copy = int64_t (*)(const float*, int64_t, float, float, float*);
  std::vector<std::pair<const char*, Copy>> versions = {{"dispatched", gather_between},
                                                        {"portable", gather_between_portable}};
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) {
    versions.emplace_back("avx2", gather_between_avx2);
  }
#endif
  // Ranges holding nothing, some and everything; both edges on weights that occur.
  const std::vector<float> w = mixed_weights(4099);
  const std::vector<std::pair<float, float>> ranges = {
      {0.5f, 0.75f}, {w[3], w[10]}, {0.0f, 2.0f}, {3.0f, 4.0f}, {w[7], w[7]}};
  for (const int n : {0, 3, 8, 9, 64, 4099}) {
    for (const auto& [lo, hi] : ranges) {
      std::vector<float> expected;
      for (int i = 0; i < n; ++i) {
        if (w[static_cast<size_t>(i)] >= lo && w[static_cast<size_t>(i)] < hi) {
          expected.push_back(w[static_cast<size_t>(i)]);
        }
      }
      for (const auto& [name, copy] : versions) {
        std::vector<float> out(static_cast<size_t>(n) + 1, -1.0f);
        const int64_t kept = copy(w.data(), n, lo, hi, out.data());
        ASSERT_EQ(kept, static_cast<int64_t>(expected.size()))
            << name << ", n " << n << ", [" << lo << ", " << hi << ")";
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(), out.begin()))
            << name << ", n " << n << ", [" << lo << ", " << hi << ")";
        EXPECT_EQ(out[static_cast<size_t>(n)], -1.0f) << name << ": wrote past n = " << n;
      }
    }
  }
}

// Plain loops: the largest value (NaN-free rows) and whether every value is finite.
RowMaxFinite plain_scan(const std::vector<float>& v) {
  RowMaxFinite r{-std::numeric_limits<float>::infinity(), true};
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
      const RowMaxFinite expected = plain_scan(row);
      for (const RowMaxFinite got : {scan_row(row), scan_row_portable(row)}) {
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

TEST(SamplerFmaExp, SameBitsAsAScalarFmaEvaluationAndAsAccurate) {
  std::vector<float> in;
  for (uint32_t bits = std::bit_cast<uint32_t>(1e-8f); bits <= std::bit_cast<uint32_t>(104.0f);
       bits += 997) {
    in.push_back(-std::bit_cast<float>(bits));
  }
  in.push_back(0.0f);
  in.push_back(-std::numeric_limits<float>::infinity());
  for (const auto [l_max, t] : {std::pair{0.0f, 1.0f}, {3.5f, 0.7f}, {-2.0f, 1.9f}}) {
    std::vector<float> shifted(in.size()), out(in.size());
    for (size_t i = 0; i < in.size(); ++i) shifted[i] = in[i] * t + l_max;
    fma_exp_weights(shifted.data(), static_cast<int64_t>(shifted.size()), l_max, t, out.data());
    double worst = 0.0;
    for (size_t i = 0; i < in.size(); ++i) {
      const float expected = sampler_test::reference_fma_exp(shifted[i], l_max, t);
      ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(expected))
          << "exp((" << shifted[i] << " - " << l_max << ") / " << t << ") = " << out[i]
          << ", the scalar fma evaluation gives " << expected;
      ASSERT_EQ(std::bit_cast<uint32_t>(fma_exp_weight(shifted[i], l_max, t)),
                std::bit_cast<uint32_t>(expected));
      const double truth = std::exp(static_cast<double>((shifted[i] - l_max) / t));
      if (truth >= kSmallestNormal) worst = std::max(worst, std::abs(out[i] - truth) / truth);
    }
    EXPECT_LT(worst, kFastExpRelError) << "l_max " << l_max << " T " << t;
    EXPECT_EQ(out[in.size() - 2], 1.0f);  // the max itself
    EXPECT_EQ(out[in.size() - 1], 0.0f);  // -inf
  }
}

// The group bound of the rejection draw: the definition's bits in every clone, never below the
// weight of its input or of anything below it (inputs where y log2 e is an integer, where the
// chord touches 2^x, and just above and below them, are where a missing margin shows), at most
// 6.25% above the weight (0 where the weight is 0), and 0 only where every weight below is 0.
TEST(SamplerFmaExp, BoundsHaveTheDefinitionsBitsAndLieAboveEveryWeightBelow) {
  std::vector<float> in;
  for (uint32_t bits = std::bit_cast<uint32_t>(1e-8f); bits <= std::bit_cast<uint32_t>(104.0f);
       bits += 997) {
    in.push_back(-std::bit_cast<float>(bits));
  }
  for (int n = 0; n <= 126; ++n) {  // y log2 e = -n, and its neighbours
    const float y = static_cast<float>(-n * 0.69314718055994531);
    for (float v = std::nextafter(std::nextafter(y, -200.0f), -200.0f); v <= 0.0f && v <= y + 1e-5f;
         v = std::nextafter(v, 1.0f)) {
      in.push_back(v);
    }
  }
  in.push_back(0.0f);
  in.push_back(-std::numeric_limits<float>::infinity());
  int checked = 0;
  for (const auto [l_max, t] : {std::pair{0.0f, 1.0f}, {3.5f, 0.7f}, {-2.0f, 1.9f}}) {
    std::vector<float> shifted(in.size()), out(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      shifted[i] = in[i] * t + l_max;
    }
    fma_exp_bounds(shifted.data(), static_cast<int64_t>(shifted.size()), l_max, t, out.data());
    for (size_t i = 0; i < in.size(); ++i) {
      const float x = shifted[i];
      const float expected = sampler_test::reference_exp_bound(x, l_max, t);
      ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(expected))
          << "bound of (" << x << " - " << l_max << ") / " << t << " = " << out[i]
          << ", the definition gives " << expected;
      ASSERT_EQ(std::bit_cast<uint32_t>(fma_exp_bound(x, l_max, t)),
                std::bit_cast<uint32_t>(expected));
      const float weight = fma_exp_weight(x, l_max, t);
      float below = x;  // x and the two floats below it
      for (int k = 0; k < 3; ++k, below = std::nextafter(below, -1e30f)) {
        ASSERT_GE(out[i], fma_exp_weight(below, l_max, t))
            << "the bound of " << x << " (l_max " << l_max << ", T " << t
            << ") is below the weight of " << below;
      }
      // Also where the weight is 0: a positive bound there would break kept_set.cpp's lower
      // bound of the weights, bound / 1.0625.
      ASSERT_LE(static_cast<double>(out[i]), 1.0625 * static_cast<double>(weight))
          << "loose bound at " << x << " (l_max " << l_max << ", T " << t << ")";
      ++checked;
    }
    EXPECT_EQ(out[in.size() - 1], 0.0f);  // -inf
  }
  EXPECT_GT(checked, 3000);
}

TEST(SamplerGroupScan, GroupMaximaOfThePlainGrouping) {
  const float inf = std::numeric_limits<float>::infinity();
  int checked = 0;
  for (const int n : {1, 7, 15, 16, 17, 255, 256, 257, 300, 511, 512, 1000, 4096, 4111}) {
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = static_cast<float>(5.0 * std::sin(0.7 * static_cast<double>(i * i + n)));
    }
    const auto groups = static_cast<size_t>(logit_group_count(n));
    ASSERT_EQ(groups % 16, 0u);
    for (const int bad_at : {-1, 0, n / 2, n - 1}) {
      for (const float bad : {inf, -inf, std::numeric_limits<float>::quiet_NaN()}) {
        std::vector<float> row = v;
        if (bad_at >= 0) row[static_cast<size_t>(bad_at)] = bad;
        std::vector<float> expected(groups, -inf), got(groups, 123.0f);
        for (size_t c = 0; c < row.size(); ++c) {
          float& m = expected[(c / 256) * 16 + c % 16];
          m = std::max(m, row[c]);
        }
        const RowMaxFinite scan = scan_row_groups(row, got);
        ASSERT_EQ(scan.all_finite, bad_at < 0) << "n " << n << " bad at " << bad_at;
        if (bad_at >= 0) continue;
        ASSERT_EQ(scan.max, *std::max_element(row.begin(), row.end())) << "n " << n;
        for (size_t g = 0; g < groups; ++g) {
          ASSERT_EQ(got[g], expected[g]) << "n " << n << " group " << g;
        }
        ++checked;
        break;  // one clean row per n
      }
    }
  }
  EXPECT_EQ(checked, 14);
}

}  // namespace
}  // namespace tessera::sampler
