// ops::linear_strided against a double-precision reference, on every backend (our AVX-512 and AVX2
// kernels where the CPU runs them, and OpenBLAS), and our kernels' promises: a row's result does
// not depend on how many rows share the call, which rows they are, or how many threads split it;
// strided operands write only their own columns; a NaN stays in its row.
#include "ops/gemm_nt.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "gemm_harness.hpp"
#include "ops/compute_threads.hpp"
#include "ops/linear.hpp"

namespace tessera::ops {
namespace {

// The backends this CPU runs: OpenBLAS, the default (AVX-512 or AVX2 kernel) and the AVX2 kernel.
std::vector<GemmBackend> backends() {
  std::vector<GemmBackend> all{GemmBackend::kAuto, GemmBackend::kBlas};
  if (gemm_nt_avx2_available() && gemm_nt_avx512_available()) {
    all.push_back(GemmBackend::kAvx2);  // else kAuto is the AVX2 kernel or BLAS already
  }
  return all;
}

// Restores process-wide settings a test changes.
class GemmTest : public ::testing::Test {
 protected:
  void TearDown() override {
    set_gemm_backend(GemmBackend::kAuto);
    set_compute_threads(threads_before_);
  }
  int threads_before_ = compute_threads();
};

// y = x W^T with every operand strided; compares with double sums within the fp32 error bound
// (K * eps * sum |x_k w_k|, Higham's bound for a dot product) and checks the padding is untouched.
void expect_matches_reference(int64_t rows, int64_t out, int64_t in, uint32_t seed) {
  const int64_t ldx = in + 3, ldw = in + 5, ldy = out + 2;
  const auto x = random_values(static_cast<size_t>(rows * ldx), seed);
  const auto w = random_values(static_cast<size_t>(out * ldw), seed + 1);
  constexpr float kSentinel = 12345.0f;
  std::vector<float> y(static_cast<size_t>(rows * ldy), kSentinel);
  linear_strided(x.data(), rows, in, ldx, w.data(), out, ldw, y.data(), ldy);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t n = 0; n < out; ++n) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < in; ++k) {
        const double p = double(x[m * ldx + k]) * double(w[n * ldw + k]);
        ref += p;
        mag += std::fabs(p);
      }
      const double tol = (static_cast<double>(in) + 2) * 6e-8 * mag + 1e-30;
      ASSERT_NEAR(y[m * ldy + n], ref, tol)
          << "rows " << rows << " out " << out << " in " << in << " at [" << m << ", " << n
          << "], backend " << gemm_backend_name();
    }
    for (int64_t n = out; n < ldy; ++n) {
      ASSERT_EQ(y[m * ldy + n], kSentinel) << "wrote past column " << out << " in row " << m;
    }
  }
}

TEST_F(GemmTest, MatchesDoubleReferenceOnEveryShapeAndEveryBackend) {
  for (const GemmBackend backend : backends()) {
    set_gemm_backend(backend);
    for (const int threads : {1, 2}) {
      set_compute_threads(threads);
      uint32_t seed = 1;
      for (const int64_t rows : {1, 2, 3, 4, 5, 7, 16, 33, 70}) {
        for (const int64_t out : {1, 3, 4, 5, 17, 64, 130}) {
          for (const int64_t in : {1, 15, 16, 17, 100, 512}) {
            expect_matches_reference(rows, out, in, seed++);
          }
        }
      }
    }
  }
}

TEST_F(GemmTest, EmptyInnerDimensionGivesZeros) {
  std::vector<float> y(6, 7.0f);
  const float x = 0, w = 0;
  linear_strided(&x, 2, 0, 0, &w, 3, 0, y.data(), 3);
  for (const float v : y) {
    EXPECT_EQ(v, 0.0f);
  }
}

// linear_strided on rows alone, in a batch, in a suffix of it and over 1-3 threads.
void expect_batch_invariant() {
  SCOPED_TRACE(gemm_backend_name());
  struct Shape {
    int64_t out, in;
  };
  // Every tail (rows, columns, K % 16); and a W of few columns, whose rows of x are shared out
  // among the threads instead of its columns (the hyper-connection mix, 24 x 2048).
  for (const Shape shape : {Shape{203, 517}, Shape{24, 2048}, Shape{17, 100}}) {
    const int64_t kRows = 67, kOut = shape.out, kIn = shape.in;
    SCOPED_TRACE(::testing::Message() << kOut << " x " << kIn);
    const auto x = random_values(kRows * kIn, 11);
    const auto w = random_values(kOut * kIn, 12);
    auto run = [&](const float* xs, int64_t rows, int threads) {
      set_compute_threads(threads);
      std::vector<float> y(static_cast<size_t>(rows * kOut));
      linear_strided(xs, rows, kIn, kIn, w.data(), kOut, kIn, y.data(), kOut);
      return y;
    };
    const auto batch = run(x.data(), kRows, 1);
    EXPECT_EQ(run(x.data(), kRows, 2), batch) << "thread split changed bits";
    EXPECT_EQ(run(x.data(), kRows, 3), batch) << "thread split changed bits";
    for (int64_t m = 0; m < kRows; ++m) {
      const auto alone = run(x.data() + m * kIn, 1, 2);
      for (int64_t n = 0; n < kOut; ++n) {
        ASSERT_EQ(alone[n], batch[m * kOut + n])
            << "row " << m << " alone vs in a batch, col " << n;
      }
    }
    // The same row among other neighbours (a suffix of the batch) and at another block position.
    const auto suffix = run(x.data() + 5 * kIn, kRows - 5, 2);
    for (int64_t m = 5; m < kRows; ++m) {
      for (int64_t n = 0; n < kOut; ++n) {
        ASSERT_EQ(suffix[(m - 5) * kOut + n], batch[m * kOut + n]) << "row " << m << " col " << n;
      }
    }
  }
}

TEST_F(GemmTest, AvxKernelsAreBatchInvariant) {
  if (!gemm_nt_avx512_available() && !gemm_nt_avx2_available()) {
    GTEST_SKIP() << "this CPU has neither AVX-512 nor AVX2 + FMA; OpenBLAS runs instead";
  }
  for (const GemmBackend backend : backends()) {
    if (backend != GemmBackend::kBlas) {
      set_gemm_backend(backend);
      expect_batch_invariant();
    }
  }
}

// A group (the MoE's experts, the projections of one x) gives each product exactly the bits of
// computing it alone: strided and packed x, tails, an empty K and an empty product among them.
TEST_F(GemmTest, GroupGivesEveryProductItsOwnBits) {
  struct Shape {
    int64_t rows, out, in, ldx;
  };
  const std::vector<Shape> shapes = {{64, 128, 256, 256}, {16, 128, 256, 256}, {3, 17, 100, 1024},
                                     {70, 130, 17, 17},   {1, 64, 512, 512},   {5, 4, 0, 0},
                                     {0, 8, 16, 16},      {33, 256, 128, 1024}};
  std::vector<std::vector<float>> xs, ws;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    xs.push_back(random_values(static_cast<size_t>(std::max<int64_t>(s.rows * s.ldx, 1)),
                               static_cast<uint32_t>(2 * i + 40)));
    ws.push_back(random_values(static_cast<size_t>(std::max<int64_t>(s.out * s.in, 1)),
                               static_cast<uint32_t>(2 * i + 41)));
  }
  for (const GemmBackend backend : backends()) {
    set_gemm_backend(backend);
    for (const int threads : {1, 2, 3}) {
      set_compute_threads(threads);
      std::vector<std::vector<float>> alone, grouped;
      std::vector<GemmNtArgs> gemms;
      for (size_t i = 0; i < shapes.size(); ++i) {
        const Shape& s = shapes[i];
        alone.emplace_back(static_cast<size_t>(s.rows * s.out), -1.0f);
        grouped.emplace_back(static_cast<size_t>(s.rows * s.out), -2.0f);
        linear_strided(xs[i].data(), s.rows, s.in, s.ldx, ws[i].data(), s.out, s.in,
                       alone[i].data(), s.out);
        gemms.push_back({xs[i].data(), s.rows, s.in, s.ldx, ws[i].data(), s.out, s.in,
                         grouped[i].data(), s.out});
      }
      linear_group(gemms);
      for (size_t i = 0; i < shapes.size(); ++i) {
        ASSERT_EQ(grouped[i], alone[i])
            << "product " << i << " (" << shapes[i].rows << " x " << shapes[i].out << " x "
            << shapes[i].in << "), " << threads << " threads, " << gemm_backend_name();
      }
    }
  }
}

// A weight held in bf16 (model/bf16_weights.hpp) gives exactly the bits of the same values in
// fp32, through linear() and linear_group, on both backends, with every K tail.
TEST_F(GemmTest, Bf16WeightsGiveTheFp32Bits) {
  for (const GemmBackend backend : backends()) {
    set_gemm_backend(backend);
    for (const int threads : {1, 2}) {
      set_compute_threads(threads);
      uint32_t seed = 70;
      for (const int64_t rows : {1, 5, 16, 64}) {
        for (const int64_t out : {3, 64, 130}) {
          for (const int64_t in : {1, 17, 100, 256}) {
            const auto x = random_values(static_cast<size_t>(rows * in), seed++);
            const auto values = random_values(static_cast<size_t>(out * in), seed++);
            dsv4::Tensor f32{{out, in}, {values.begin(), values.end()}, {}};
            for (float& v : f32.data) {  // keep the top 16 bits: a bfloat16
              v = std::bit_cast<float>(std::bit_cast<uint32_t>(v) & 0xFFFF0000u);
            }
            dsv4::Tensor bf16{{out, in}, {}, {}};
            for (const float v : f32.data) {
              bf16.bf16.push_back(static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16));
            }
            ASSERT_TRUE(bf16.in_bf16());
            std::vector<float> want(static_cast<size_t>(rows * out)), got(want.size(), -1.0f);
            linear(x.data(), rows, f32, want.data());
            linear(x.data(), rows, bf16, got.data());
            ASSERT_EQ(got, want) << rows << " x " << out << " x " << in << ", " << threads
                                 << " threads, " << gemm_backend_name();
            // Rows [1, out) of W as one product of a group, next to an fp32 product; compared
            // with the same rows in fp32 (OpenBLAS's bits depend on the shape, ours do not).
            std::vector<float> part(static_cast<size_t>(rows * (out - 1))), other(want.size());
            std::vector<float> want_part(part.size());
            linear_strided(x.data(), rows, in, in, f32.ptr() + in, out - 1, in, want_part.data(),
                           out - 1);
            const GemmNtArgs group[] = {
                weight_product(x.data(), rows, in, bf16, part.data(), out - 1, 1),
                weight_product(x.data(), rows, in, f32, other.data(), out)};
            linear_group(group);
            ASSERT_EQ(other, want);
            ASSERT_EQ(part, want_part) << "rows [1, " << out << ") of a bf16 weight, " << rows
                                       << " x " << in << ", " << gemm_backend_name();
          }
        }
      }
    }
  }
}

TEST_F(GemmTest, NanStaysInItsRow) {
  for (const GemmBackend backend : backends()) {
    set_gemm_backend(backend);
    constexpr int64_t kRows = 6, kOut = 9, kIn = 40;
    auto x = random_values(kRows * kIn, 3);
    const auto w = random_values(kOut * kIn, 4);
    x[2 * kIn + 33] = std::nanf("");
    std::vector<float> y(kRows * kOut);
    linear_strided(x.data(), kRows, kIn, kIn, w.data(), kOut, kIn, y.data(), kOut);
    for (int64_t m = 0; m < kRows; ++m) {
      for (int64_t n = 0; n < kOut; ++n) {
        EXPECT_EQ(std::isnan(y[m * kOut + n]), m == 2)
            << gemm_backend_name() << " row " << m << " col " << n;
      }
    }
  }
}

TEST_F(GemmTest, ParallelForRunsEveryItemOnceFromManyCallers) {
  set_compute_threads(2);
  std::vector<std::thread> callers;
  std::vector<int> failures(4, 0);
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 300; ++round) {
        const int64_t items = 1 + (round * 7 + c) % 97;
        std::vector<std::atomic<int>> hits(static_cast<size_t>(items));
        parallel_for(items, 2, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
        for (auto& h : hits) {
          failures[static_cast<size_t>(c)] += h.load() != 1;
        }
      }
    });
  }
  for (auto& t : callers) {
    t.join();
  }
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(failures[static_cast<size_t>(c)], 0) << "caller " << c;
  }
}

// Many tiny jobs in a row: the owner often finishes both items before its helper wakes and takes
// the job back; a helper that read an old job number must never run (or wait for) a newer one.
// A protocol race here shows up as a hang (CTest's timeout) or a miscount.
TEST_F(GemmTest, ParallelForSurvivesRapidTinyJobs) {
  set_compute_threads(2);
  int64_t total = 0;
  for (int round = 0; round < 200000; ++round) {
    std::atomic<int64_t> sum{0};
    parallel_for(2, 2, [&](int64_t i) { sum.fetch_add(i + 1); });
    total += sum.load();
  }
  EXPECT_EQ(total, int64_t{3} * 200000);
}

// Inside an item, compute_threads() is 1 and a nested parallel_for (an expert's GEMM inside the
// loop over experts) runs every item on the item's own thread, once, and leaves the outer count.
TEST_F(GemmTest, NestedParallelForRunsOnTheItemsThread) {
  set_compute_threads(2);
  std::vector<std::atomic<int>> hits(8 * 5);
  std::atomic<int> wrong_thread{0}, wrong_count{0};
  parallel_for(8, 2, [&](int64_t outer) {
    wrong_count.fetch_add(compute_threads() != 1);
    const std::thread::id me = std::this_thread::get_id();
    parallel_for(5, 2, [&](int64_t inner) {
      wrong_thread.fetch_add(std::this_thread::get_id() != me);
      hits[static_cast<size_t>(outer * 5 + inner)].fetch_add(1);
    });
  });
  EXPECT_EQ(wrong_count.load(), 0);
  EXPECT_EQ(wrong_thread.load(), 0);
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_EQ(compute_threads(), 2);  // outside any item again
}

}  // namespace
}  // namespace tessera::ops
