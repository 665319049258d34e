// The reference attention's two bodies (plugins/attention_reference: the AVX-512 kernel and the
// plain loops) give the float outputs of the fp32 definition sparse_attention.cpp lists: checked
// bit for bit against that definition written out here as scalar code (this file is compiled
// without FMA contraction, so each product and sum below is rounded as written), and against the
// softmax in long double. A different fold order, a product and a sum where an fma belongs, a
// wrong row, order of rows, scale or softmax all change output bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "reference_kernels.hpp"
#include "sparse_attention_avx2.hpp"
#include "sparse_attention_avx512.hpp"
#include "tessera/fma_exp.hpp"

namespace tessera::reference {
namespace {

// ((l0 + l8) + (l4 + l12)) + ((l2 + l10) + (l6 + l14)) ... : lanes k and k + 8, then k + 4, k + 2.
float fold(const float* l) {
  float h8[8], h4[4];
  for (int k = 0; k < 8; ++k) {
    h8[k] = l[k] + l[k + 8];
  }
  for (int k = 0; k < 4; ++k) {
    h4[k] = h8[k] + h8[k + 4];
  }
  return (h4[0] + h4[2]) + (h4[1] + h4[3]);
}

// The definition: 16 fma chains over the first dim - dim % 16 columns, folded, then an fma chain
// over the rest; softmax with the sink through fma_exp_nonpositive, its sum in 16 lanes folded;
// the weighted sum one fma per row, rows in order, times the denominator's reciprocal.
std::vector<float> definition(const std::vector<float>& q, int32_t heads, int32_t dim,
                              const std::vector<const float*>& rows, float scale,
                              const std::vector<float>& sink) {
  std::vector<float> out(static_cast<size_t>(heads * dim));
  const auto n = static_cast<int64_t>(rows.size());
  for (int32_t h = 0; h < heads; ++h) {
    const float* qh = q.data() + static_cast<int64_t>(h) * dim;
    std::vector<float> s(static_cast<size_t>(n));
    float m = sink[h];
    for (int64_t j = 0; j < n; ++j) {
      float lane[16] = {};
      const int32_t full = dim - dim % 16;
      for (int32_t c = 0; c < full; ++c) {
        lane[c % 16] = std::fma(qh[c], rows[j][c], lane[c % 16]);
      }
      float dot = fold(lane);
      for (int32_t c = full; c < dim; ++c) {
        dot = std::fma(qh[c], rows[j][c], dot);
      }
      s[j] = dot * scale;
      m = std::max(m, s[j]);
    }
    float lanes[16] = {};
    for (int64_t j = 0; j < n; ++j) {
      s[j] = sdk::fma_exp_nonpositive(s[j] - m);
      lanes[j % 16] = lanes[j % 16] + s[j];
    }
    const float denom = fold(lanes) + sdk::fma_exp_nonpositive(sink[h] - m);
    for (int32_t c = 0; c < dim; ++c) {
      float acc = 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        acc = std::fma(s[j], rows[j][c], acc);
      }
      out[static_cast<size_t>(h) * dim + c] = acc * (1.0f / denom);
    }
  }
  return out;
}

// The same softmax-weighted sum in long double, for a tolerance check of the definition itself:
// the largest error relative to the size of the output's terms (sum_j w_j |row_j[c]|), the scale
// of fp32 rounding error where the terms cancel.
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
      long double acc = 0, magnitude = 0;  // the weighted sum and the sum of its terms' sizes
      for (size_t j = 0; j < rows.size(); ++j) {
        acc += s[j] * rows[j][c];
        magnitude += s[j] * std::abs(rows[j][c]);
      }
      const double want = static_cast<double>(acc / denom);
      const double err = std::abs(want - got[static_cast<size_t>(h) * dim + c]);
      worst = std::max(worst, err / std::max(1e-30, static_cast<double>(magnitude / denom)));
    }
  }
  return worst;
}

// fp32 accumulation (ARCHITECTURE.md): against the long-double softmax the outputs stay within
// this error relative to the size of their terms (1.4e-6 measured).
constexpr double kFp32Tolerance = 4e-6;

using Body = void (*)(const float*, int32_t, int32_t, const float* const*, int64_t, float,
                      const float*, float*);

// Every tail of the 16 lanes and of the 32-column weighted sum; row counts around the kernel's
// dot groups (2, 4, 8 or 16 rows a group); rows given out of order and repeated, as the indexer's
// picks are; head counts that take every group size (8, 4, 2, 1) and mixes of them.
void expect_definition_bits(Body body, const char* name) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  int cases = 0;
  double worst = 0.0;
  for (const int32_t dim : {1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 128, 129, 512}) {
    for (const int64_t n : {0, 1, 2, 3, 4, 5, 15, 17, 56, 133}) {
      const int32_t heads =
          std::array<int32_t, 6>{3, 8, 15, 1, 4, 2}[static_cast<size_t>(cases % 6)];
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
      body(q.data(), heads, dim, rows.data(), n, scale, sink.data(), got.data());
      const std::vector<float> want = definition(q, heads, dim, rows, scale, sink);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
            << name << ": dim " << dim << ", " << heads << " heads, " << n << " rows, output " << i
            << ": " << got[i] << " vs " << want[i];
      }
      const double error = max_error_vs_long_double(got, q, heads, dim, rows, scale, sink);
      EXPECT_LT(error, kFp32Tolerance) << name << ": dim " << dim << ", " << n << " rows";
      worst = std::max(worst, error);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 150);
  std::printf("%s: largest relative error against long double %.3g\n", name, worst);
}

// attend_with_sink (the entry point) gives the kernel's outputs.
template <class Kernel>
void expect_entry_point_gives(Kernel kernel) {
  std::vector<float> q(size_t{8} * 128, 0.5f), kv(size_t{3} * 128, 0.25f), sink(8, 0.0f),
      a(q.size()), b(q.size());
  const std::vector<const float*> rows{kv.data(), kv.data() + 128, kv.data() + 256};
  attend_with_sink(q.data(), 8, 128, rows.data(), 3, 0.1f, sink.data(), a.data());
  kernel(q.data(), 8, 128, rows.data(), 3, 0.1f, sink.data(), b.data());
  EXPECT_EQ(a, b);
}

TEST(ReferenceAttentionKernel, PlainLoopsComputeTheDefinitionBitForBit) {
  expect_definition_bits(attend_with_sink_plain, "plain loops");
}

TEST(ReferenceAttentionKernel, Avx512KernelComputesItsDefinitionBitForBit) {
  if (!attend_avx512_available()) {
    GTEST_SKIP() << "this CPU has no AVX-512F: attend_with_sink runs the plain loops instead";
  }
  expect_definition_bits(attend_with_sink_avx512, "AVX-512 kernel");
  expect_entry_point_gives(attend_with_sink_avx512);  // it runs this kernel on this CPU
}

TEST(ReferenceAttentionKernel, Avx2KernelComputesItsDefinitionBitForBit) {
  if (!attend_avx2_available()) {
    GTEST_SKIP() << "this CPU has no AVX2 + FMA: attend_with_sink runs the plain loops instead";
  }
  expect_definition_bits(attend_with_sink_avx2, "AVX2 kernel");
  // It runs this kernel on a CPU without AVX-512F (and the same bits where it has).
  expect_entry_point_gives(attend_with_sink_avx2);
}

// indexer_select's scores are its definition's (lightning_indexer.cpp: each head's dot as the
// attention's, ReLU, an fma chain over the heads), so its picks are exactly the definition's top-k
// (ties to the lower index); and they are long double's top-k but for near-ties.
TEST(ReferenceAttentionKernel, IndexerPicksTheTopKOfItsFp32Scores) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int near_ties = 0;
  for (const int32_t head_dim : {1, 16, 17, 64, 128}) {
    for (const int64_t n : {0, 1, 5, 64, 300}) {
      const int32_t heads = 4, top_k = 16;
      std::vector<float> q(static_cast<size_t>(heads * head_dim)), w(heads),
          keys(static_cast<size_t>(n * head_dim));
      for (auto* values : {&q, &w, &keys}) {
        for (auto& v : *values) {
          v = normal(rng);
        }
      }
      std::vector<float> score(static_cast<size_t>(n));
      std::vector<long double> exact(static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k) {
        float total = 0.0f;
        long double total_ld = 0;
        for (int32_t h = 0; h < heads; ++h) {
          const float* qh = q.data() + static_cast<int64_t>(h) * head_dim;
          const float* key = keys.data() + k * head_dim;
          float lane[16] = {};
          const int32_t full = head_dim - head_dim % 16;
          long double dot_ld = 0;
          for (int32_t c = 0; c < head_dim; ++c) {
            if (c < full) {
              lane[c % 16] = std::fma(qh[c], key[c], lane[c % 16]);
            }
            dot_ld += static_cast<long double>(qh[c]) * key[c];
          }
          float dot = fold(lane);
          for (int32_t c = full; c < head_dim; ++c) {
            dot = std::fma(qh[c], key[c], dot);
          }
          total = std::fma(w[h], std::max(dot, 0.0f), total);
          total_ld += w[h] * std::max<long double>(dot_ld, 0);
        }
        score[static_cast<size_t>(k)] = total;
        exact[static_cast<size_t>(k)] = total_ld;
      }
      const auto top = [&](const auto& s) {
        std::vector<int32_t> order(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int32_t a, int32_t b) { return s[a] > s[b]; });
        order.resize(static_cast<size_t>(std::min<int64_t>(top_k, n)));
        return order;
      };
      const std::vector<int32_t> got =
          indexer_select(q.data(), w.data(), heads, head_dim, keys.data(), n, top_k);
      ASSERT_EQ(got, top(score)) << "head_dim " << head_dim << ", " << n << " keys";
      const std::vector<int32_t> want = top(exact);
      for (size_t i = 0; i < got.size(); ++i) {
        if (got[i] != want[i]) {  // only where the two scores lie within fp32 rounding
          ++near_ties;
          EXPECT_LT(std::abs(static_cast<double>(exact[got[i]] - exact[want[i]])),
                    1e-5 * std::abs(static_cast<double>(exact[want[i]])) + 1e-6)
              << "head_dim " << head_dim << ", " << n << " keys, pick " << i;
        }
      }
    }
  }
  EXPECT_LE(near_ties, 2);
}

}  // namespace
}  // namespace tessera::reference
