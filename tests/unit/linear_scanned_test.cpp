// ops::linear_scanned (the vocabulary head): y bit for bit as linear() gives it, and each row's
// max, lowest argmax and finiteness as a plain loop over y finds them, for fp32 and bf16 weights,
// 1 and 2 threads, our kernel and the BLAS fallback, with and without each row's column-group
// maxima (plugin_abi.h TS_LOGIT_GROUP_*; against a plain loop); and the column scans it is built
// from, on ties across ranges, NaN, infinities and signed zeros.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "ops/compute_threads.hpp"
#include "ops/linear.hpp"
#include "ops/scan_columns.hpp"
#include "tessera/plugin_abi.h"

namespace tessera::ops {
namespace {

RowScan plain_scan(const float* v, int64_t n) {
  RowScan s{v[0], 0, true};
  for (int64_t c = 0; c < n; ++c) {
    if (!std::isfinite(v[c])) {
      return RowScan{0.0f, -1, false};
    }
    if (v[c] > s.max) {
      s = RowScan{v[c], static_cast<int32_t>(c), true};
    }
  }
  return s;
}

void expect_scans_of(const std::vector<float>& y, int64_t rows, int64_t cols,
                     const std::vector<RowScan>& scans) {
  for (int64_t r = 0; r < rows; ++r) {
    const RowScan want = plain_scan(y.data() + r * cols, cols);
    const RowScan& got = scans[static_cast<size_t>(r)];
    ASSERT_EQ(got.finite, want.finite) << "row " << r;
    if (!want.finite) {
      continue;
    }
    EXPECT_EQ(got.max, want.max) << "row " << r;
    EXPECT_EQ(got.argmax, want.argmax) << "row " << r << " (max " << want.max << ")";
  }
}

// [rows, TS_LOGIT_GROUP_COUNT(cols)]: column c of a row in group (c / 256) * 16 + c % 16.
std::vector<float> plain_group_maxima(const std::vector<float>& y, int64_t rows, int64_t cols) {
  const int64_t groups = TS_LOGIT_GROUP_COUNT(cols);
  std::vector<float> m(static_cast<size_t>(rows * groups), -std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float& g = m[static_cast<size_t>(r * groups + (c / 256) * 16 + c % 16)];
      g = std::max(g, y[static_cast<size_t>(r * cols + c)]);
    }
  }
  return m;
}

dsv4::Tensor random_weight(int64_t out, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  dsv4::Tensor w;
  w.shape = {out, in};
  w.data.resize(static_cast<size_t>(out * in));
  for (float& v : w.data) {
    v = normal(rng);
  }
  return w;
}

// The weight's values truncated to bfloat16 and held in Tensor::bf16 (as a checkpoint's are).
void keep_in_bf16(dsv4::Tensor& w) {
  w.bf16.resize(w.data.size());
  for (size_t i = 0; i < w.data.size(); ++i) {
    w.bf16[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(w.data[i]) >> 16);
  }
  w.data.clear();
}

TEST(ScanColumns, TiesAcrossRangesKeepTheLowestColumn) {
  // Row 0: the max 5 at columns 3, 300 and 700; row 1: -0 and +0 tie at the top.
  const int64_t cols = 1000;
  std::vector<float> y(2 * cols, -1.0f);
  y[3] = y[300] = y[700] = 5.0f;
  y[cols + 10] = -0.0f;
  y[cols + 500] = 0.0f;
  for (const std::vector<int64_t>& cuts :
       {std::vector<int64_t>{0, 1000}, std::vector<int64_t>{0, 256, 512, 768, 1000},
        std::vector<int64_t>{0, 2, 4, 301, 999, 1000}}) {
    std::vector<RowScan> total(2), part(2);
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      scan_columns(y.data(), 2, cols, cuts[i], cuts[i + 1], part);
      for (size_t r = 0; r < 2; ++r) {
        if (i == 0) {
          total[r] = part[r];
        } else {
          merge_scan(total[r], part[r]);
        }
      }
    }
    EXPECT_EQ(total[0].argmax, 3);
    EXPECT_EQ(total[0].max, 5.0f);
    EXPECT_EQ(total[1].argmax, 10) << "-0 and +0 are equal: the first one";
    EXPECT_TRUE(total[0].finite && total[1].finite);
  }
}

TEST(ScanColumns, NaNAndInfinityAnywhereMakeTheRowNotFinite) {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (const float b : bad) {
    for (const int64_t at : {0, 1, 255, 256, 999}) {
      std::vector<float> y(1000, 0.5f);
      y[static_cast<size_t>(at)] = b;
      std::vector<RowScan> total(1), part(1);
      scan_columns(y.data(), 1, 1000, 0, 256, total);
      scan_columns(y.data(), 1, 1000, 256, 1000, part);
      merge_scan(total[0], part[0]);
      EXPECT_FALSE(total[0].finite) << b << " at " << at;
    }
  }
}

class LinearScanned : public ::testing::TestWithParam<int> {
 protected:
  void TearDown() override {
    set_compute_threads(static_cast<int>(std::thread::hardware_concurrency()));
    set_gemm_backend(GemmBackend::kAuto);
  }
};

TEST_P(LinearScanned, SameYAsLinearAndTheScansOfIt) {
  set_compute_threads(GetParam());
  for (const bool blas : {false, true}) {
    set_gemm_backend(blas ? GemmBackend::kBlas : GemmBackend::kAuto);
    for (const bool bf16 : {false, true}) {
      for (const auto [rows, out, in] : {std::tuple<int64_t, int64_t, int64_t>{1, 1000, 64},
                                         {3, 300, 96},
                                         {64, 4096, 128},
                                         {17, 257, 32}}) {
        SCOPED_TRACE(testing::Message() << rows << " x " << out << " x " << in
                                        << (bf16 ? " bf16" : "") << (blas ? " blas" : ""));
        dsv4::Tensor w = random_weight(out, in, static_cast<uint32_t>(out + in));
        if (out > 700) {  // columns 5 and 700 (different items) equal and large: a tie at the top
          for (int64_t k = 0; k < in; ++k) {
            w.data[static_cast<size_t>(5 * in + k)] *= 10.0f;
            w.data[static_cast<size_t>(700 * in + k)] = w.data[static_cast<size_t>(5 * in + k)];
          }
        }
        if (bf16) {
          keep_in_bf16(w);
        }
        std::mt19937 rng(static_cast<uint32_t>(rows));
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> x(static_cast<size_t>(rows * in));
        for (float& v : x) {
          v = normal(rng);
        }
        std::vector<float> want(static_cast<size_t>(rows * out)), got(want.size(), -7.0f);
        linear(x.data(), rows, w, want.data());
        std::vector<RowScan> scans(static_cast<size_t>(rows));
        linear_scanned(x.data(), rows, w, got.data(), scans);
        ASSERT_EQ(got, want) << "linear_scanned changed y";
        expect_scans_of(got, rows, out, scans);
        // With the column-group maxima: the same y and scans, and the groups of a plain loop.
        std::vector<float> groups(static_cast<size_t>(rows * TS_LOGIT_GROUP_COUNT(out)), 123.0f);
        std::fill(got.begin(), got.end(), -7.0f);
        linear_scanned(x.data(), rows, w, got.data(), scans, groups);
        ASSERT_EQ(got, want) << "linear_scanned with groups changed y";
        expect_scans_of(got, rows, out, scans);
        EXPECT_EQ(groups, plain_group_maxima(want, rows, out));
        if (out > 700) {
          int ties = 0;
          for (int64_t r = 0; r < rows; ++r) {
            ties += scans[static_cast<size_t>(r)].argmax == 5;
          }
          EXPECT_GE(ties, rows / 4) << "the tie at the top was seldom tested";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, LinearScanned, ::testing::Values(1, 2));

}  // namespace
}  // namespace tessera::ops
