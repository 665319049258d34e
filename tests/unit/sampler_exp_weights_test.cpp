// The sampler's vectorised exp (plugins/sampler/src/exp_weights.cpp, compiled into this test) held
// to the error bound its certified decisions rely on: within kFastExpRelError of a double-precision
// exp wherever the result is a normal float, within kWeightAbsError below that, exactly 1 at 0 and
// 0 for removed (-inf) tokens; and the block sums equal a plain double sum of the weights.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "exp_weights.hpp"

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

}  // namespace
}  // namespace tessera::sampler
