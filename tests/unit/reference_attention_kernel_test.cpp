// The reference attention's AVX-512 kernel
// (plugins/attention_reference/sparse_attention_avx512.cpp) gives the float outputs of the
// definition its file lists: checked bit for bit against that definition written out here as scalar
// code (this file is compiled without FMA contraction, so each product and sum below is rounded as
// written), and against the softmax in long double. The outputs are floats of double sums: a
// different rounding of one double operation (an fma for a product and a sum) shows only in the ~1
// in 2^29 outputs that lie that close to a float rounding boundary; a wrong row, order of rows,
// scale or softmax shows everywhere.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "reference_kernels.hpp"
#include "sparse_attention_avx512.hpp"

namespace tessera::reference {
namespace {

// The definition: 8 partial sums of products (no FMA) over the first dim - dim % 8 columns,
// folded ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)), then the remaining columns; softmax with the
// sink through std::exp; the weighted sum one fma per row, rows in order.
std::vector<float> definition(const std::vector<float>& q, int32_t heads, int32_t dim,
                              const std::vector<const float*>& rows, float scale,
                              const std::vector<float>& sink) {
  std::vector<float> out(static_cast<size_t>(heads * dim));
  const auto n = static_cast<int64_t>(rows.size());
  for (int32_t h = 0; h < heads; ++h) {
    const float* qh = q.data() + static_cast<int64_t>(h) * dim;
    std::vector<double> s(static_cast<size_t>(n));
    double m = sink[h];
    for (int64_t j = 0; j < n; ++j) {
      double lane[8] = {};
      const int32_t full = dim - dim % 8;
      for (int32_t c = 0; c < full; ++c) {
        const double product = static_cast<double>(qh[c]) * static_cast<double>(rows[j][c]);
        lane[c % 8] = lane[c % 8] + product;
      }
      double dot =
          ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
      for (int32_t c = full; c < dim; ++c) {
        const double product = static_cast<double>(qh[c]) * static_cast<double>(rows[j][c]);
        dot = dot + product;
      }
      s[j] = dot * static_cast<double>(scale);
      m = std::max(m, s[j]);
    }
    double denom = std::exp(static_cast<double>(sink[h]) - m);
    for (int64_t j = 0; j < n; ++j) {
      s[j] = std::exp(s[j] - m);
      denom += s[j];
    }
    for (int32_t c = 0; c < dim; ++c) {
      double acc = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        acc = std::fma(s[j], static_cast<double>(rows[j][c]), acc);
      }
      out[static_cast<size_t>(h) * dim + c] = static_cast<float>(acc / denom);
    }
  }
  return out;
}

// The same softmax-weighted sum in long double, for a tolerance check of the definition itself.
double max_error_vs_long_double(const std::vector<float>& got, const std::vector<float>& q,
                                int32_t heads, int32_t dim, const std::vector<const float*>& rows,
                                float scale, const std::vector<float>& sink) {
  double worst = 0;
  for (int32_t h = 0; h < heads; ++h) {
    std::vector<long double> s(rows.size());
    long double m = sink[h];
    for (size_t j = 0; j < rows.size(); ++j) {
      long double dot = 0;
      for (int32_t c = 0; c < dim; ++c) {
        dot += static_cast<long double>(q[static_cast<size_t>(h) * dim + c]) * rows[j][c];
      }
      s[j] = dot * scale;
      m = std::max(m, s[j]);
    }
    long double denom = std::exp(static_cast<long double>(sink[h]) - m);
    for (auto& v : s) {
      v = std::exp(v - m);
      denom += v;
    }
    for (int32_t c = 0; c < dim; ++c) {
      long double acc = 0;
      for (size_t j = 0; j < rows.size(); ++j) {
        acc += s[j] * rows[j][c];
      }
      const double want = static_cast<double>(acc / denom);
      const double err = std::abs(want - got[static_cast<size_t>(h) * dim + c]);
      worst = std::max(worst, err / std::max(1e-3, std::abs(want)));
    }
  }
  return worst;
}

TEST(ReferenceAttentionKernel, Avx512KernelComputesItsDefinitionBitForBit) {
  if (!attend_avx512_available()) {
    GTEST_SKIP() << "this CPU has no AVX-512F: attend_with_sink runs the plain loops instead";
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  int cases = 0;
  // Dims with every tail (of 8 and of the 64-column blocks); row counts around the 4-row groups;
  // rows given out of order and repeated, as the indexer's picks are.
  // Head counts that take every group size of the kernel (8, 4, 2, 1) and mixes of them.
  for (const int32_t dim : {1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100, 128, 129, 192, 512}) {
    for (const int64_t n : {0, 1, 2, 3, 4, 5, 17, 56, 133}) {
      const int32_t heads = std::array<int32_t, 4>{3, 8, 15, 1}[static_cast<size_t>(cases % 4)];
      std::vector<float> q(static_cast<size_t>(heads * dim)), kv(static_cast<size_t>(n * dim)),
          sink(static_cast<size_t>(heads));
      for (auto* values : {&q, &kv, &sink}) {
        for (auto& v : *values) {
          v = normal(rng);
        }
      }
      std::vector<const float*> rows;
      for (int64_t j = 0; j < n; ++j) {
        rows.push_back(kv.data() + (j * 7 % n) * dim);
      }
      const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
      std::vector<float> got(q.size());
      attend_with_sink_avx512(q.data(), heads, dim, rows.data(), n, scale, sink.data(), got.data());
      const std::vector<float> want = definition(q, heads, dim, rows, scale, sink);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
            << "dim " << dim << ", " << n << " rows, output " << i << ": " << got[i] << " vs "
            << want[i];
      }
      EXPECT_LT(max_error_vs_long_double(got, q, heads, dim, rows, scale, sink), 1e-6)
          << "dim " << dim << ", " << n << " rows";
      // The entry point runs this kernel on this CPU.
      std::vector<float> dispatched(q.size());
      attend_with_sink(q.data(), heads, dim, rows.data(), n, scale, sink.data(), dispatched.data());
      ASSERT_EQ(dispatched, got) << "dim " << dim << ", " << n << " rows";
      ++cases;
    }
  }
  EXPECT_EQ(cases, 135);
}

}  // namespace
}  // namespace tessera::reference
