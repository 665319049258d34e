// The rejection draw's envelope (plugins/sampler/src/rejection_draw.cpp, compiled into this test):
// the block prefix sums and the total build_envelope finds have the bits of the definition
// (docs/sampler.md "Rejection draw": the bounds U_g, each block's fixed tree of pair sums, the
// running sum in block order), written out here one group at a time. The token-for-token tests
// (sampler_rejection_test.cpp) would not notice a sum one ulp off; this one does. Rows: full
// blocks in fours and not (the plugin sums four blocks at a time), a partial last block, flat and
// peaked rows, the max tied in several groups, temperatures 1 and 0.7. Then the lane sums of a
// truncated row's kept set (kept_set.hpp): every version adds the same operands in the same order.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "fma_exp_reference.hpp"
#include "kept_set.hpp"
#include "rejection_draw.hpp"

namespace tessera::sampler {
namespace {

std::vector<float> group_maxima(const std::vector<float>& l) {
  std::vector<float> m((l.size() + 255) / 256 * 16, -std::numeric_limits<float>::infinity());
  for (size_t c = 0; c < l.size(); ++c) {
    float& g = m[(c / 256) * 16 + c % 16];
    g = std::max(g, l[c]);
  }
  return m;
}

// The documented prefix sums: U_g = n_g bound(m_g), or the exact weight of a group
// holding the max; block sum ((P0 + P1) + (P2 + P3)) + ((P4 + P5) + (P6 + P7)), Pk = U(2k) +
// U(2k+1); prefix = running sum.
std::vector<double> reference_prefix(const std::vector<float>& l, float t) {
  const float l_max = *std::max_element(l.begin(), l.end());
  const std::vector<float> gmax = group_maxima(l);
  std::vector<double> prefix(gmax.size() / 16);
  double total = 0.0;
  for (size_t b = 0; b < prefix.size(); ++b) {
    double u[16];
    for (size_t lane = 0; lane < 16; ++lane) {
      size_t n = 0;
      double exact = 0.0;
      for (size_t c = b * 256 + lane; c < std::min(l.size(), (b + 1) * 256); c += 16) {
        ++n;
        exact += static_cast<double>(sampler_test::reference_fma_exp(l[c], l_max, t));
      }
      const float m = gmax[b * 16 + lane];
      u[lane] = m == l_max
                    ? exact
                    : static_cast<double>(n) *
                          static_cast<double>(sampler_test::reference_exp_bound(m, l_max, t));
    }
    double p[8];
    for (size_t k = 0; k < 8; ++k) {
      p[k] = u[2 * k] + u[2 * k + 1];
    }
    total += ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
    prefix[b] = total;
  }
  return prefix;
}

TEST(SamplerEnvelope, BlockPrefixSumsHaveTheDefinitionsBits) {
  std::mt19937_64 rng(11);
  int rows = 0;
  for (const size_t vocab : {300, 1000, 1280, 2304, 4096, 16384}) {
    for (const float spread : {1.0f, 4.0f}) {
      for (const float t : {1.0f, 0.7f}) {
        for (const bool ties : {false, true}) {
          std::normal_distribution<float> normal(0.0f, spread);
          std::vector<float> l(vocab);
          for (float& x : l) {
            x = normal(rng);
          }
          if (ties) {  // the max in several groups: several exact bounds, in several blocks
            const float top = *std::max_element(l.begin(), l.end());
            for (size_t c = 17; c < vocab; c += vocab / 5 + 3) {
              l[c] = top;
            }
          }
          const std::vector<float> gmax = group_maxima(l);
          const float l_max = *std::max_element(l.begin(), l.end());
          RejectionEnvelope env;
          build_envelope(l, gmax, l_max, t, 5, 9, env);
          const std::vector<double> expected = reference_prefix(l, t);
          ASSERT_EQ(env.block_prefix.size(), expected.size()) << "vocab " << vocab;
          for (size_t b = 0; b < expected.size(); ++b) {
            ASSERT_EQ(std::bit_cast<uint64_t>(env.block_prefix[b]),
                      std::bit_cast<uint64_t>(expected[b]))
                << "vocab " << vocab << ", spread " << spread << ", T " << t << ", ties " << ties
                << ": block " << b << " prefix " << env.block_prefix[b] << " (" << std::hexfloat
                << env.block_prefix[b] << "), the definition " << expected[b] << std::defaultfloat;
          }
          EXPECT_EQ(std::bit_cast<uint64_t>(env.total), std::bit_cast<uint64_t>(expected.back()));
          ++rows;
        }
      }
    }
  }
  EXPECT_EQ(rows, 48);
}

// Blocks added one after another (the lanes carried between them): every version's bits equal
// a plain loop's, lane c % 16 adding column c's weight in column order, to above when its logit is
// above l (ties with l left out).
TEST(SamplerKeptLanes, EveryVersionHasThePlainLoopsBits) {
  std::mt19937_64 rng(61);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  constexpr size_t kBlocks = 5;
  std::vector<float> logits(kBlocks * 256), w(kBlocks * 256);
  for (size_t c = 0; c < logits.size(); ++c) {
    logits[c] = std::round(normal(rng) * 4.0f) / 4.0f;  // many ties with l
    w[c] = sampler_test::reference_fma_exp(logits[c], 12.0f, 0.7f) * (c % 3 == 0 ? 1e-9f : 1.0f);
  }
  for (const float l : {-100.0f, -1.0f, 0.0f, 0.5f, 3.25f, 100.0f}) {
    double all[16] = {}, above[16] = {};
    for (size_t c = 0; c < logits.size(); ++c) {
      all[c % 16] += static_cast<double>(w[c]);
      if (logits[c] > l) {
        above[c % 16] += static_cast<double>(w[c]);
      }
    }
    BlockLanes dispatched, portable;
    for (size_t b = 0; b < kBlocks; ++b) {
      add_block_lanes(logits.data() + b * 256, w.data() + b * 256, l, dispatched);
      add_block_lanes_portable(logits.data() + b * 256, w.data() + b * 256, l, portable);
    }
    for (size_t lane = 0; lane < 16; ++lane) {
      EXPECT_EQ(std::bit_cast<uint64_t>(dispatched.all[lane]), std::bit_cast<uint64_t>(all[lane]))
          << "l " << l << " lane " << lane;
      EXPECT_EQ(std::bit_cast<uint64_t>(dispatched.above[lane]),
                std::bit_cast<uint64_t>(above[lane]))
          << "l " << l << " lane " << lane;
      EXPECT_EQ(std::bit_cast<uint64_t>(portable.all[lane]), std::bit_cast<uint64_t>(all[lane]))
          << "l " << l << " lane " << lane;
      EXPECT_EQ(std::bit_cast<uint64_t>(portable.above[lane]), std::bit_cast<uint64_t>(above[lane]))
          << "l " << l << " lane " << lane;
    }
  }
}

}  // namespace
}  // namespace tessera::sampler
