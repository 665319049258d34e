// The paths that take exp from glibc's vector math library (libmvec): the MoE's SwiGLU
// (ops/swiglu.hpp) and the compressor's softmax pooling (ops/softmax_pool.hpp, on AVX-512 and on
// AVX2), each against its one-value-at-a-time std::exp reference, on every tail of the vector
// width, the swiglu_limit clamp, extreme inputs, and pooling over one window or a window and its
// previous.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "ops/softmax_pool.hpp"
#include "ops/swiglu.hpp"

namespace tessera {
namespace {

std::vector<float> uniform(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = u(rng);
  }
  return v;
}

TEST(Swiglu, VectorPathMatchesStdExpOnEveryTailAndWithTheLimit) {
  for (const float limit : {0.0f, 7.0f}) {
    for (const int64_t count : {1, 15, 16, 17, 33, 4096}) {
      auto g = uniform(static_cast<size_t>(count), -30.0f, 30.0f, 3);
      const auto u = uniform(static_cast<size_t>(count), -12.0f, 12.0f, 4);
      g[0] = -200.0f;  // exp(200) is inf: silu gives -0, not NaN
      auto ref = g;
      ops::swiglu(g.data(), u.data(), count, limit);
      ops::swiglu_scalar(ref.data(), u.data(), count, limit);
      for (int64_t i = 0; i < count; ++i) {
        ASSERT_FALSE(std::isnan(g[i])) << "at " << i;
        // exp within 1 ulp; the divide, add and multiply round as in the reference
        ASSERT_NEAR(g[i], ref[i], 4e-7f * std::fabs(ref[i]) + 1e-30f)
            << "count " << count << " limit " << limit << " at " << i << ": g " << g[i];
      }
      if (limit > 0) {
        for (int64_t i = 0; i < count; ++i) {
          ASSERT_LE(std::fabs(g[i]), limit * limit * 1.0001f) << "clamp lost at " << i;
        }
      }
    }
  }
}

TEST(SoftmaxPool, VectorPathMatchesStdExpForOneWindowAndWithThePreviousOne) {
  for (const int64_t dim : {1, 7, 8, 9, 128}) {
    for (const int64_t ratio : {4, 128}) {
      const int64_t stride = 2 * dim + 3;
      const auto kv = uniform(static_cast<size_t>(2 * ratio * stride), -3.0f, 3.0f, 5);
      auto gate = uniform(kv.size(), -40.0f, 40.0f, 6);
      gate[0] = -std::numeric_limits<float>::infinity();  // a weight of exactly 0
      const dsv4::PoolRows cur{kv.data(), gate.data(), ratio, stride};
      const dsv4::PoolRows prev{kv.data() + ratio * stride + dim,
                                gate.data() + ratio * stride + dim, ratio, stride};
      for (const int n_parts : {1, 2}) {
        const dsv4::PoolRows parts[2] = {cur, prev};
        std::vector<float> entry(static_cast<size_t>(dim) + 1, 99.0f), ref(entry);
        dsv4::softmax_pool({parts, static_cast<size_t>(n_parts)}, dim, entry.data());
        dsv4::softmax_pool_scalar({parts, static_cast<size_t>(n_parts)}, dim, ref.data());
        for (int64_t j = 0; j < dim; ++j) {
          ASSERT_NEAR(entry[j], ref[j], 2e-7f * std::fabs(ref[j]) + 1e-30f)
              << "dim " << dim << " ratio " << ratio << " parts " << n_parts << " channel " << j;
        }
        ASSERT_EQ(entry[dim], 99.0f) << "wrote past dim";
      }
    }
  }
}

}  // namespace
}  // namespace tessera
