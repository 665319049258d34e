// bf16 activations (model.dtype = "bf16"): under ops::Bf16ActivationScope, a weight held in bf16
// multiplies x rounded to bf16 (nearest even) on vdpbf16ps. Checked against a double-precision
// sum of the rounded inputs' products (exact in bf16 x bf16, so only the fp32 additions err), for
// every tail of rows, columns and K; the kernel keeps the fp32 kernel's promises (a row's bits do
// not depend on its batch, its neighbours, the thread split or a group); the scope reaches the
// helper threads and ends with its owner; fp32 weights stay fp32. With TESSERA_AMX=1 on a CPU with
// AMX-BF16 the products run on AMX tiles (gemm_nt_amx.cpp) and these tests check that kernel (ctest
// runs this binary twice: gemm_bf16_activations_amx sets it); the last one checks it is the one
// that runs there, against the vdpbf16ps kernel called directly.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "gemm_harness.hpp"
#include "ops/compute_threads.hpp"
#include "ops/gemm_nt.hpp"
#include "ops/gemm_nt_blocks.hpp"
#include "ops/linear.hpp"

namespace tessera::ops {
namespace {

// Round to nearest even, as a reference (finite values).
float to_bf16(float v) {
  const uint32_t b = std::bit_cast<uint32_t>(v);
  return std::bit_cast<float>((b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u);
}

dsv4::Tensor bf16_weight(int64_t out, int64_t in, uint32_t seed) {
  dsv4::Tensor w{{out, in}, {}, {}};
  for (const float v : random_values(static_cast<size_t>(out * in), seed)) {
    w.bf16.push_back(static_cast<uint16_t>(std::bit_cast<uint32_t>(to_bf16(v)) >> 16));
  }
  return w;
}

float widened(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }

class GemmBf16Test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gemm_nt_bf16_available()) {
      GTEST_SKIP() << "this CPU has no AVX512_BF16: model.dtype = \"bf16\" is refused here";
    }
  }
  void TearDown() override { set_compute_threads(threads_before_); }
  int threads_before_ = compute_threads();
};

TEST_F(GemmBf16Test, MatchesDoubleReferenceOnRoundedInputs) {
  uint32_t seed = 300;
  int differs_from_fp32 = 0;
  for (const int threads : {1, 2}) {
    set_compute_threads(threads);
    for (const int64_t rows : {1, 5, 16, 67}) {
      for (const int64_t out : {3, 64, 130}) {
        for (const int64_t in : {1, 17, 31, 32, 33, 100, 517}) {
          const auto x = random_values(static_cast<size_t>(rows * in), seed++);
          const dsv4::Tensor w = bf16_weight(out, in, seed++);
          std::vector<float> y(static_cast<size_t>(rows * out)), y32(y.size());
          {
            const Bf16ActivationScope precision(true);
            linear(x.data(), rows, w, y.data());
          }
          linear(x.data(), rows, w, y32.data());
          for (int64_t m = 0; m < rows; ++m) {
            for (int64_t n = 0; n < out; ++n) {
              double ref = 0, mag = 0;
              for (int64_t k = 0; k < in; ++k) {
                const double p =
                    double(to_bf16(x[m * in + k])) * double(widened(w.bf16[n * in + k]));
                ref += p;
                mag += std::fabs(p);
              }
              const double tol = (static_cast<double>(in) + 2) * 6e-8 * mag + 1e-30;
              const float got = y[static_cast<size_t>(m * out + n)];
              ASSERT_NEAR(got, ref, tol) << rows << " x " << out << " x " << in << " at [" << m
                                         << ", " << n << "], " << threads << " threads";
              differs_from_fp32 += got != y32[static_cast<size_t>(m * out + n)];
            }
          }
        }
      }
    }
  }
  EXPECT_GT(differs_from_fp32, 1000) << "the scope did not round x: the fp32 kernel ran";
}

TEST_F(GemmBf16Test, RowsGetTheSameBitsInAnyBatchSplitOrGroup) {
  constexpr int64_t kRows = 67, kOut = 203, kIn = 517;
  const auto x = random_values(kRows * kIn, 41);
  const dsv4::Tensor w = bf16_weight(kOut, kIn, 42);
  const Bf16ActivationScope precision(true);
  auto run = [&](const float* xs, int64_t rows, int threads) {
    return linear_on_threads(xs, rows, w, threads);
  };
  const auto batch = run(x.data(), kRows, 1);
  EXPECT_EQ(run(x.data(), kRows, 2), batch) << "thread split changed bits";
  for (int64_t m = 0; m < kRows; m += 7) {
    const auto alone = run(x.data() + m * kIn, 1, 2);
    for (int64_t n = 0; n < kOut; ++n) {
      ASSERT_EQ(alone[n], batch[m * kOut + n]) << "row " << m << " alone vs in a batch, col " << n;
    }
  }
  // In a group, strided x (every other row), next to an fp32 weight that must stay fp32.
  set_compute_threads(2);
  const dsv4::Tensor f32 = [] {
    const std::vector<float> v = random_values(kOut * kIn, 43);
    return dsv4::Tensor{{kOut, kIn}, {v.begin(), v.end()}, {}};
  }();
  const dsv4::Tensor w2 = bf16_weight(kOut, kIn, 44);
  std::vector<float> strided((kRows / 2) * kOut), other(kRows * kOut), other_fp32(other.size());
  std::vector<float> twin(strided.size()), twin_alone(strided.size());
  const GemmNtArgs group[] = {
      weight_product(x.data(), kRows / 2, 2 * kIn, w, strided.data(), kOut),
      weight_product(x.data(), kRows, kIn, f32, other.data(), kOut),
      weight_product(x.data(), kRows / 2, 2 * kIn, w2, twin.data(), kOut)};  // shares the 1st x
  linear_group(group);
  const GemmNtArgs alone[] = {
      weight_product(x.data(), kRows / 2, 2 * kIn, w2, twin_alone.data(), kOut)};
  linear_group(alone);
  EXPECT_EQ(twin, twin_alone) << "a product sharing another's rounded x";
  for (int64_t m = 0; m < kRows / 2; ++m) {
    for (int64_t n = 0; n < kOut; ++n) {
      ASSERT_EQ(strided[m * kOut + n], batch[2 * m * kOut + n])
          << "group row " << m << " col " << n;
    }
  }
  {
    const Bf16ActivationScope fp32(false);
    linear(x.data(), kRows, f32, other_fp32.data());
  }
  EXPECT_EQ(other, other_fp32) << "an fp32 weight was multiplied in bf16";
}

TEST_F(GemmBf16Test, ScopeNestsAndReachesTheHelpers) {
  EXPECT_FALSE(bf16_activations());
  {
    const Bf16ActivationScope on(true);
    EXPECT_TRUE(bf16_activations());
    {
      const Bf16ActivationScope off(false);
      EXPECT_FALSE(bf16_activations());
    }
    EXPECT_TRUE(bf16_activations());
    set_compute_threads(2);
    std::vector<int> seen(64, -1);
    std::vector<std::thread::id> where(64);
    parallel_for(64, 2, [&](int64_t i) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // the helper takes some
      seen[static_cast<size_t>(i)] = bf16_activations();
      where[static_cast<size_t>(i)] = std::this_thread::get_id();
    });
    EXPECT_EQ(seen, std::vector<int>(64, 1)) << "an item ran without its caller's setting";
    EXPECT_NE(std::count(where.begin(), where.end(), std::this_thread::get_id()), 64)
        << "no item ran on a helper";
  }
  EXPECT_FALSE(bf16_activations());
  std::vector<int> seen(64, -1);
  parallel_for(64, 2, [&](int64_t i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    seen[static_cast<size_t>(i)] = bf16_activations();
  });
  EXPECT_EQ(seen, std::vector<int>(64, 0)) << "a helper kept an earlier caller's setting";
}

// Where AMX is usable, bf16 products run on it: the same values within the fp32 bound of the
// vdpbf16ps kernel (called directly here), in other bits (the two accumulate in other orders).
TEST_F(GemmBf16Test, OnAmxTheTilesRunAndAgreeWithTheVdpbf16psKernel) {
  if (!gemm_nt_amx_available()) {
    GTEST_SKIP() << "AMX off (TESSERA_AMX is not 1) or not on this CPU: vdpbf16ps runs";
  }
  const int64_t rows = 37, out = 100, in = 517;
  const auto x = random_values(static_cast<size_t>(rows * in), 11);
  const dsv4::Tensor w = bf16_weight(out, in, 12);
  std::vector<float> amx(static_cast<size_t>(rows * out));
  {
    const Bf16ActivationScope precision(true);
    linear(x.data(), rows, w, amx.data());
  }
  std::vector<uint16_t> xb(static_cast<size_t>(rows * in));
  round_rows_to_bf16(x.data(), rows, in, in, xb.data());
  std::vector<float> dp(amx.size());
  GemmNtArgs a{nullptr, rows, in, in, nullptr, out, in, dp.data(), out};
  a.w_bf16 = w.bf16.data();
  a.x_bf16 = xb.data();
  gemm_detail::gemm_nt_range_bf16(a, 0, out);
  int differ = 0;
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t n = 0; n < out; ++n) {
      double mag = 0;
      for (int64_t k = 0; k < in; ++k) {
        mag += std::fabs(double(widened(xb[m * in + k])) * double(widened(w.bf16[n * in + k])));
      }
      const auto i = static_cast<size_t>(m * out + n);
      ASSERT_NEAR(amx[i], dp[i], 2 * (in + 2) * 6e-8 * mag) << "[" << m << ", " << n << "]";
      differ += amx[i] != dp[i] ? 1 : 0;
    }
  }
  EXPECT_GT(differ, 0) << "every bit as vdpbf16ps's: did the AMX kernel run?";
}

}  // namespace
}  // namespace tessera::ops
