// Weights packed into panels (ops::pack_weight_panels, the outer-product kernels of
// gemm_nt_panels.cpp and gemm_nt_panels_avx2.cpp): products against a double-precision reference
// on every backend the CPU runs (OpenBLAS unpacks them), every tail of rows, columns and K,
// products over rows of W that do not start a panel and over a range of input columns; and the
// kernel's promises: batch- and split-invariant, bf16 panels give the fp32 panels' bits, packing
// and unpacking give the rows back.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "gemm_harness.hpp"
#include "model/bf16_weights.hpp"
#include "model/dsv4_weights.hpp"
#include "ops/compute_threads.hpp"
#include "ops/gemm_nt.hpp"
#include "ops/linear.hpp"

namespace tessera::ops {
namespace {

// OpenBLAS and our kernels this CPU runs: the default (AVX-512, else AVX2) and the AVX2 one.
std::vector<GemmBackend> backends(bool with_blas) {
  std::vector<GemmBackend> all{GemmBackend::kAuto};
  if (with_blas) {
    all.push_back(GemmBackend::kBlas);
  }
  if (gemm_nt_avx512_available() && gemm_nt_avx2_available()) {
    all.push_back(GemmBackend::kAvx2);
  }
  return all;
}

class GemmPanelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gemm_reads_panels()) {
      GTEST_SKIP() << "this CPU has neither AVX-512 nor AVX2 + FMA: weights are never packed into "
                      "panels";
    }
  }
  void TearDown() override {
    set_gemm_backend(GemmBackend::kAuto);
    set_compute_threads(threads_before_);
  }
  int threads_before_ = compute_threads();
};

// W [out, in] as a linear weight packed into panels (fp32, or bf16 when `bf16`).
dsv4::Tensor packed(const std::vector<float>& w, int64_t out, int64_t in, bool bf16 = false) {
  dsv4::Tensor t;
  t.shape = {out, in};
  const int64_t size = weight_panel_count(out) * in * kWeightPanelWidth;
  if (bf16) {
    std::vector<uint16_t> rows(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      rows[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(w[i]) >> 16);
    }
    t.bf16_panels.resize(static_cast<size_t>(size));
    pack_weight_panels(rows.data(), out, in, t.bf16_panels.data());
  } else {
    t.panels.resize(static_cast<size_t>(size));
    pack_weight_panels(w.data(), out, in, t.panels.data());
  }
  return t;
}

// y[rows, out] (rows ldy apart) against double sums of x . W[first_row + n] over input columns
// [k0, k0 + count), within the fp32 bound (Higham: K * eps * sum |x_k w_k|); columns past out
// must keep their sentinel.
void expect_reference(const std::vector<float>& x, int64_t rows, int64_t in,
                      const std::vector<float>& w, int64_t first_row, int64_t out, int64_t k0,
                      int64_t count, const std::vector<float>& y, int64_t ldy, float sentinel) {
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t n = 0; n < out; ++n) {
      double ref = 0, mag = 0;
      for (int64_t k = k0; k < k0 + count; ++k) {
        const double p = double(x[m * in + k]) * double(w[(first_row + n) * in + k]);
        ref += p;
        mag += std::fabs(p);
      }
      const double tol = (static_cast<double>(count) + 2) * 6e-8 * mag + 1e-30;
      ASSERT_NEAR(y[m * ldy + n], ref, tol)
          << rows << " x " << out << " x " << in << " from row " << first_row << ", k " << k0 << "+"
          << count << " at [" << m << ", " << n << "], backend " << gemm_backend_name();
    }
    for (int64_t n = out; n < ldy; ++n) {
      ASSERT_EQ(y[m * ldy + n], sentinel) << "wrote past column " << out << " in row " << m;
    }
  }
}

TEST_F(GemmPanelsTest, MatchesDoubleReferenceOnEveryShapeAndEveryBackend) {
  constexpr float kSentinel = 12345.0f;
  uint32_t seed = 1;
  for (const GemmBackend backend : backends(true)) {
    set_gemm_backend(backend);
    for (const int threads : {1, 2}) {
      set_compute_threads(threads);
      for (const int64_t rows : {1, 2, 5, 6, 7, 13, 33, 70}) {
        for (const int64_t out : {1, 3, 16, 17, 24, 33, 130}) {
          for (const int64_t in : {1, 15, 16, 17, 100, 512, 2048}) {
            const auto x = random_values(static_cast<size_t>(rows * in), seed++);
            const auto w = random_values(static_cast<size_t>(out * in), seed++);
            const dsv4::Tensor t = packed(w, out, in);
            const int64_t ldy = out + 2;
            std::vector<float> y(static_cast<size_t>(rows * ldy), kSentinel);
            const GemmNtArgs a = weight_product(x.data(), rows, in, t, y.data(), ldy);
            ASSERT_TRUE(a.in_panels());
            linear_group(std::span<const GemmNtArgs>(&a, 1));
            expect_reference(x, rows, in, w, 0, out, 0, in, y, ldy, kSentinel);
          }
        }
      }
    }
  }
}

// Rows of W that do not start a panel (the grouped wo_a of a config whose o_lora_rank is not a
// multiple of 16), and a range of input columns (executor.reduction_parts), in a group.
TEST_F(GemmPanelsTest, RowRangesAndInputColumnRangesOfPanels) {
  constexpr float kSentinel = -777.0f;
  const int64_t rows = 9, out = 70, in = 96;
  const auto x = random_values(static_cast<size_t>(rows * in), 5);
  const auto w = random_values(static_cast<size_t>(out * in), 6);
  const dsv4::Tensor t = packed(w, out, in);
  for (const GemmBackend backend : backends(true)) {
    set_gemm_backend(backend);
    for (const int64_t first_row : {0, 5, 8, 16, 21, 69}) {
      for (const int64_t count : {int64_t{1}, int64_t{19}, out - first_row}) {
        if (first_row + count > out) {
          continue;
        }
        const int64_t ldy = count + 1;
        std::vector<float> y(static_cast<size_t>(rows * ldy), kSentinel);
        std::vector<float> y_cols(y);
        const GemmNtArgs whole =
            weight_product(x.data(), rows, in, t, y.data(), ldy, first_row, count);
        GemmNtArgs cols = input_columns(whole, 17, 40);
        cols.y = y_cols.data();
        const std::vector<GemmNtArgs> group{whole, cols};
        linear_group(group);
        expect_reference(x, rows, in, w, first_row, count, 0, in, y, ldy, kSentinel);
        expect_reference(x, rows, in, w, first_row, count, 17, 40, y_cols, ldy, kSentinel);
      }
    }
  }
}

// Every output is one FMA chain over k: the same bits alone or in any batch, on any thread split,
// in a group split finely, and from bf16 panels of bf16 values as from fp32 panels.
void expect_split_and_storage_invariant() {
  SCOPED_TRACE(gemm_backend_name());
  const int64_t kRows = 67, kOut = 203, kIn = 517;
  const auto x = random_values(static_cast<size_t>(kRows * kIn), 11);
  auto w = random_values(static_cast<size_t>(kOut * kIn), 12);
  for (float& v : w) {
    v = std::bit_cast<float>(std::bit_cast<uint32_t>(v) & 0xFFFF0000u);  // bf16 values
  }
  const dsv4::Tensor fp32 = packed(w, kOut, kIn), bf16 = packed(w, kOut, kIn, true);
  auto run = [](const dsv4::Tensor& t, const float* xs, int64_t rows, int threads) {
    return linear_on_threads(xs, rows, t, threads);
  };
  const auto batch = run(fp32, x.data(), kRows, 1);
  EXPECT_EQ(run(fp32, x.data(), kRows, 2), batch) << "thread split changed bits";
  EXPECT_EQ(run(fp32, x.data(), kRows, 3), batch) << "thread split changed bits";
  EXPECT_EQ(run(bf16, x.data(), kRows, 2), batch) << "bf16 panels gave other bits";
  for (int64_t m = 0; m < kRows; m += 3) {
    const auto alone = run(fp32, x.data() + m * kIn, 1, 2);
    for (int64_t n = 0; n < kOut; ++n) {
      ASSERT_EQ(alone[n], batch[m * kOut + n]) << "row " << m << " alone vs in a batch, col " << n;
    }
  }
  const auto suffix = run(fp32, x.data() + 5 * kIn, kRows - 5, 2);
  for (int64_t m = 5; m < kRows; ++m) {
    for (int64_t n = 0; n < kOut; ++n) {
      ASSERT_EQ(suffix[(m - 5) * kOut + n], batch[m * kOut + n]) << "row " << m << " col " << n;
    }
  }
  // One product of a group with many (cut into many items): the same bits.
  set_compute_threads(2);
  std::vector<float> y(batch.size()), other(static_cast<size_t>(kRows * 16));
  const dsv4::Tensor small = packed(random_values(16 * kIn, 13), 16, kIn);
  const std::vector<GemmNtArgs> group{weight_product(x.data(), kRows, kIn, small, other.data(), 16),
                                      weight_product(x.data(), kRows, kIn, fp32, y.data(), kOut)};
  linear_group(group);
  EXPECT_EQ(y, batch) << "a group changed bits";
}

TEST_F(GemmPanelsTest, BatchSplitAndStorageInvariant) {
  for (const GemmBackend backend : backends(false)) {
    set_gemm_backend(backend);
    expect_split_and_storage_invariant();
  }
}

// The AVX2 tiles hold a panel in two vectors, the AVX-512 ones in one: each output is still the
// same FMA chain, so the two kernels give the same bits.
TEST_F(GemmPanelsTest, Avx2AndAvx512KernelsGiveTheSameBits) {
  if (!gemm_nt_avx512_available() || !gemm_nt_avx2_available()) {
    GTEST_SKIP() << "needs both kernels: this CPU has " << gemm_backend_name() << " only";
  }
  const int64_t kRows = 67, kOut = 203, kIn = 517;
  const auto x = random_values(static_cast<size_t>(kRows * kIn), 31);
  const dsv4::Tensor w = packed(random_values(static_cast<size_t>(kOut * kIn), 32), kOut, kIn);
  const auto avx512 = linear_on_threads(x.data(), kRows, w, 2);
  set_gemm_backend(GemmBackend::kAvx2);
  ASSERT_STREQ(gemm_backend_name(), "avx2");
  EXPECT_EQ(linear_on_threads(x.data(), kRows, w, 2), avx512);
  EXPECT_EQ(linear_on_threads(x.data(), 1, w, 1),
            std::vector<float>(avx512.begin(), avx512.begin() + kOut));
}

// The mHC's mixing product (24 outputs of a 2048-wide row, 32 tokens a thread): with so long a K
// a chunk of panels is held to a whole tile's width. Rows alone, in a batch, on 1 or 2 threads:
// the same bits.
void expect_long_inputs_keep_the_bits() {
  const int64_t kRows = 33, kOut = 24, kIn = 2048;
  const auto x = random_values(static_cast<size_t>(kRows * kIn), 21);
  const dsv4::Tensor t = packed(random_values(static_cast<size_t>(kOut * kIn), 22), kOut, kIn);
  auto run = [&](const float* xs, int64_t rows, int threads) {
    return linear_on_threads(xs, rows, t, threads);
  };
  const auto batch = run(x.data(), kRows, 1);
  EXPECT_EQ(run(x.data(), kRows, 2), batch) << "thread split changed bits";
  for (int64_t m = 0; m < kRows; ++m) {
    const auto alone = run(x.data() + m * kIn, 1, 1);
    for (int64_t n = 0; n < kOut; ++n) {
      ASSERT_EQ(alone[n], batch[m * kOut + n]) << "row " << m << " alone vs in a batch, col " << n;
    }
  }
}

TEST_F(GemmPanelsTest, LongInputsKeepTheBitsOfEveryRowAlone) {
  for (const GemmBackend backend : backends(false)) {
    set_gemm_backend(backend);
    SCOPED_TRACE(gemm_backend_name());
    expect_long_inputs_keep_the_bits();
  }
}

TEST_F(GemmPanelsTest, UnpackingGivesTheRowsBack) {
  const int64_t out = 37, in = 23;
  const auto w = random_values(static_cast<size_t>(out * in), 21);
  std::vector<float> panels(static_cast<size_t>(weight_panel_count(out) * in * kWeightPanelWidth));
  pack_weight_panels(w.data(), out, in, panels.data());
  // the padding rows of the last panel are zeros
  for (int64_t k = 0; k < in; ++k) {
    for (int64_t j = out % kWeightPanelWidth; j < kWeightPanelWidth; ++j) {
      ASSERT_EQ(panels[(2 * in + k) * kWeightPanelWidth + j], 0.0f) << "k " << k << " lane " << j;
    }
  }
  const int64_t stride = in * kWeightPanelWidth;
  for (const int64_t first : {0, 3, 16, 36}) {
    std::vector<float> rows(static_cast<size_t>((out - first) * in));
    unpack_weight_panels(panels.data(), stride, first, out - first, in, rows.data(), in);
    EXPECT_EQ(rows, std::vector<float>(w.begin() + first * in, w.end())) << "from row " << first;
  }
  std::vector<uint16_t> w16(w.size()), p16(panels.size()), back(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    w16[i] = static_cast<uint16_t>(i * 7919u);
  }
  pack_weight_panels(w16.data(), out, in, p16.data());
  unpack_weight_panels(p16.data(), stride, 0, out, in, back.data(), in);
  EXPECT_EQ(back, w16);
}

}  // namespace
}  // namespace tessera::ops
