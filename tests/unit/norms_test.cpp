// The RMS norms (core/src/ops/norms.*) against a long-double evaluation of their formula,
// x * rsqrt(mean(x^2) + eps), on widths that exercise the 32 interleaved partial sums and every
// tail length, with values spread over many magnitudes so a dropped or doubled element shows.
#include "ops/norms.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace tessera {
namespace {

long double reference_scale(const std::vector<float>& x, float eps) {
  long double sum = 0;
  for (const float v : x) {
    sum += static_cast<long double>(v) * v;
  }
  return 1.0L / std::sqrt(sum / static_cast<long double>(x.size()) + eps);
}

std::vector<float> spread_row(std::mt19937& rng, int64_t width) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-6, 6);
  std::vector<float> x(static_cast<size_t>(width));
  for (float& v : x) {
    v = std::ldexp(unit(rng), exponent(rng));
  }
  return x;
}

TEST(Norms, RmsScaleIsTheFormulaOnEveryTail) {
  std::mt19937 rng(5);
  const float eps = 1e-6f;
  for (const int64_t width : {1, 7, 8, 31, 32, 33, 63, 64, 95, 128, 300, 512, 2047, 2048, 2049}) {
    const std::vector<float> x = spread_row(rng, width);
    const long double want = reference_scale(x, eps);
    const float got = ops::rms_scale(x.data(), width, eps);
    // The double sum is exact to ~1e-16; the float result is the reference within its rounding.
    EXPECT_LE(std::fabs(static_cast<long double>(got) - want), want * 0x1.0p-23L)
        << "width " << width << ": " << got << " vs " << static_cast<double>(want);
  }
}

TEST(Norms, WeightedAndUnweightedNormsScaleEveryRowByItsOwnRms) {
  std::mt19937 rng(9);
  const int64_t rows = 3, width = 77;
  const float eps = 1e-6f;
  std::vector<float> x = spread_row(rng, rows * width), y = x, weight = spread_row(rng, width);
  ops::rms_norm(x.data(), rows, width, weight.data(), eps);
  ops::rms_norm_unweighted(y.data(), rows, width, eps);
  std::mt19937 again(9);
  const std::vector<float> original = spread_row(again, rows * width);
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<float> row(original.begin() + r * width, original.begin() + (r + 1) * width);
    const long double scale = reference_scale(row, eps);
    for (int64_t i = 0; i < width; ++i) {
      const long double plain = row[static_cast<size_t>(i)] * scale;
      const long double weighted = weight[static_cast<size_t>(i)] * plain;
      EXPECT_NEAR(static_cast<double>(y[static_cast<size_t>(r * width + i)]),
                  static_cast<double>(plain), std::fabs(static_cast<double>(plain)) * 3e-7)
          << "row " << r << " column " << i;
      EXPECT_NEAR(static_cast<double>(x[static_cast<size_t>(r * width + i)]),
                  static_cast<double>(weighted), std::fabs(static_cast<double>(weighted)) * 3e-7)
          << "row " << r << " column " << i;
    }
  }
}

}  // namespace
}  // namespace tessera
