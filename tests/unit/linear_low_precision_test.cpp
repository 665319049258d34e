// The CPU's FP8 and FP4 products (ops/linear_low_precision.hpp) on every kernel this CPU runs
// (AVX-512, AVX2 + FMA, and the written-out definition where OpenBLAS runs), against the
// definition and against formats:: (core/cuda/kernels/number_formats.cuh) value by value:
// - a one-hot x picks single weights out of the product: each output is one decoded weight times
//   its scale, bit for bit, for all 256 e4m3 codes (subnormals and NaN included) and all 16 e2m1
//   codes, at scales from 2^-127 to 2^127;
// - an identity W picks single activations out: each output is the activation rounded to e4m3 in
//   its 1x128 block, bit for bit, over values from 2^-40 to 2^40, signs, zeros and ties;
// - random products of ragged shapes (inputs not a multiple of 16, outputs past a 128-row block,
//   a last tile of one row) equal the definition within fp32 reordering, with 1 and 2 threads.
#include "ops/linear_low_precision.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/number_formats.cuh"
#include "ops/compute_threads.hpp"
#include "ops/gemm_nt.hpp"
#include "ops/linear.hpp"
#include "ops/low_precision_decode.hpp"

namespace tessera::ops {
namespace {

std::vector<GemmBackend> backends() {
  std::vector<GemmBackend> all{GemmBackend::kAuto, GemmBackend::kBlas};
  if (gemm_nt_avx512_available() && gemm_nt_avx2_available()) {
    all.push_back(GemmBackend::kAvx2);
  }
  return all;
}

uint32_t bits(float v) {
  uint32_t b = 0;
  std::memcpy(&b, &v, 4);
  return b;
}

// got is want: the same bits, or both zero (a sum of +0 products is +0 where want is -0), or both
// NaN.
bool same(float got, float want) {
  if (std::isnan(want)) return std::isnan(got);
  return (want == 0.0f && got == 0.0f) || bits(got) == bits(want);
}

// UE8M0 codes whose products with every e4m3 / e2m1 value stay normal fp32 numbers: the decoding
// is exact there (ops/low_precision_decode.hpp). (The definition's FP4 sums scale an unscaled
// activation block, up to 448, by the weight's scale first: 2^113 keeps that finite.)
const std::vector<uint8_t> kScaleCodes{10, 60, 100, 127, 140, 200, 240};

class LinearLowPrecision : public ::testing::Test {
 protected:
  void TearDown() override {
    set_gemm_backend(GemmBackend::kAuto);
    set_compute_threads(threads_before_);
  }
  int threads_before_ = compute_threads();
};

// x = one-hot rows (x[r][r] = 1, quantised to exactly 1): y[r][o] = W[o][r] decoded. A NaN code
// would make every output of its row NaN (0 * NaN): NaNCodesStayNaN checks those.
TEST_F(LinearLowPrecision, Fp8WeightsDecodeToTheirExactValues) {
  const int64_t in = 256, out = 128;  // every code along a row, two blocks of scales
  std::vector<float> x(static_cast<size_t>(in * in), 0.0f), y(static_cast<size_t>(in * out));
  for (int64_t r = 0; r < in; ++r) {
    x[static_cast<size_t>(r * in + r)] = 1.0f;
  }
  std::vector<uint8_t> w(static_cast<size_t>(out * in));
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < in; ++i) {
      const auto c = static_cast<uint8_t>((i + o * 7) % 256);
      w[static_cast<size_t>(o * in + i)] = (c & 0x7F) == 0x7F ? 0 : c;
    }
  }
  for (const GemmBackend backend : backends()) {
    set_gemm_backend(backend);
    for (const uint8_t code : kScaleCodes) {
      const std::vector<uint8_t> scale{code, static_cast<uint8_t>(256 - code)};
      linear_fp8(x.data(), in, in, w.data(), scale.data(), out, y.data());
      for (int64_t r = 0; r < in; ++r) {
        for (int64_t o = 0; o < out; ++o) {
          const uint8_t c = w[static_cast<size_t>(o * in + r)];
          const uint8_t sc = scale[static_cast<size_t>(r / 128)];
          const float want = formats::e4m3_to_float(c) * formats::ue8m0_to_float(sc);
          const float got = y[static_cast<size_t>(r * out + o)];
          ASSERT_TRUE(same(got, want))
              << "backend " << gemm_backend_name() << " code 0x" << std::hex << int(c)
              << " scale code " << std::dec << int(sc) << ": got " << got << ", want " << want;
        }
      }
    }
  }
}

TEST_F(LinearLowPrecision, NaNCodesStayNaN) {
  const int64_t in = 128, out = 4;
  std::vector<float> x(static_cast<size_t>(in), 0.5f), y(static_cast<size_t>(out));
  std::vector<uint8_t> w(static_cast<size_t>(out * in), 0x38);
  w[static_cast<size_t>(1 * in + 5)] = 0x7F;
  w[static_cast<size_t>(3 * in + 100)] = 0xFF;
  const std::vector<uint8_t> scale{127};
  for (const GemmBackend backend : backends()) {
    set_gemm_backend(backend);
    linear_fp8(x.data(), 1, in, w.data(), scale.data(), out, y.data());
    EXPECT_EQ(y[0], 64.0f) << gemm_backend_name();
    EXPECT_TRUE(std::isnan(y[1])) << gemm_backend_name();
    EXPECT_EQ(y[2], 64.0f) << gemm_backend_name();
    EXPECT_TRUE(std::isnan(y[3])) << gemm_backend_name();
  }
}

TEST_F(LinearLowPrecision, Fp4WeightsDecodeToTheirExactValues) {
  const int64_t in = 64, out = 35;  // two groups a row; a last tile of 3 rows
  std::vector<float> x(static_cast<size_t>(in * in), 0.0f), y(static_cast<size_t>(in * out));
  for (int64_t r = 0; r < in; ++r) {
    x[static_cast<size_t>(r * in + r)] = 1.0f;
  }
  std::vector<uint8_t> w(static_cast<size_t>(out * in / 2)), scale(static_cast<size_t>(out * 2));
  for (size_t b = 0; b < w.size(); ++b) {
    w[b] = static_cast<uint8_t>((b * 37) % 256);  // every pair of nibbles across the rows
  }
  for (size_t g = 0; g < scale.size(); ++g) {
    scale[g] = kScaleCodes[g % kScaleCodes.size()];
  }
  for (const GemmBackend backend : backends()) {
    set_gemm_backend(backend);
    linear_fp4(x.data(), in, in, w.data(), scale.data(), out, y.data());
    for (int64_t r = 0; r < in; ++r) {
      for (int64_t o = 0; o < out; ++o) {
        const uint8_t pair = w[static_cast<size_t>(o * in / 2 + r / 2)];
        const float v = formats::e2m1_to_float(r % 2 == 0 ? pair & 0xF : pair >> 4);
        const float want = v * formats::ue8m0_to_float(scale[static_cast<size_t>(o * 2 + r / 32)]);
        ASSERT_TRUE(same(y[static_cast<size_t>(r * out + o)], want))
            << "backend " << gemm_backend_name() << " output " << o << " input " << r;
      }
    }
  }
}

// W = identity (e4m3 1.0, scale 1): y = x quantised per 1x128 block.
TEST_F(LinearLowPrecision, ActivationsRoundToE4m3InTheirBlock) {
  const int64_t in = 128, rows = 400;
  std::vector<uint8_t> w(static_cast<size_t>(in * in), 0);
  for (int64_t i = 0; i < in; ++i) {
    w[static_cast<size_t>(i * in + i)] = 0x38;  // 1.0
  }
  const std::vector<uint8_t> scale{127};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-40, 40), spread(0, 30);
  std::vector<float> x(static_cast<size_t>(rows * in)), y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const int top = exponent(rng);  // each block spans 2^(top - 30) .. 2^top
    for (int64_t i = 0; i < in; ++i) {
      float v = std::ldexp(mantissa(rng), top - spread(rng));
      if (i % 17 == 0) v = std::ldexp(1.0f + 0.0625f * static_cast<float>(i % 5), top - 9);
      if (i % 23 == 0) v = 0.0f;  // ties above; zeros here
      x[static_cast<size_t>(r * in + i)] = (i + r) % 3 == 0 ? -v : v;
    }
  }
  for (const GemmBackend backend : backends()) {
    set_gemm_backend(backend);
    linear_fp8(x.data(), rows, in, w.data(), scale.data(), in, y.data());
    for (int64_t r = 0; r < rows; ++r) {
      float amax = 0.0f;
      for (int64_t i = 0; i < in; ++i)
        amax = std::max(amax, std::fabs(x[static_cast<size_t>(r * in + i)]));
      const float s = formats::e4m3_block_scale(amax);
      for (int64_t i = 0; i < in; ++i) {
        const float v = x[static_cast<size_t>(r * in + i)];
        const float want = formats::e4m3_to_float(formats::float_to_e4m3(v / s)) * s;
        ASSERT_TRUE(same(y[static_cast<size_t>(r * in + i)], want))
            << "backend " << gemm_backend_name() << " row " << r << " x " << v << " scale " << s;
      }
    }
  }
}

// The decoders alone, at every UE8M0 code (the table paths move exponents; scales that would leave
// bf16's normal range take the multiplying path): each value is the top half of formats::' value
// times the scale, as the definition computes it.
TEST_F(LinearLowPrecision, DecodedTilesAreTheScaledValuesAtEveryScale) {
  std::vector<uint8_t> w8(256), w4(256);
  for (int c = 0; c < 256; ++c) {
    w8[static_cast<size_t>(c)] = static_cast<uint8_t>(c);
    w4[static_cast<size_t>(c)] = static_cast<uint8_t>(c);  // every pair of nibbles
  }
  std::vector<uint16_t> got8(256), got4(512);
  auto check = [](uint16_t got, float want, const char* what, int code, int scale) {
    const uint32_t widened = static_cast<uint32_t>(got) << 16;
    float g = 0.0f;
    std::memcpy(&g, &widened, 4);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(g)) << what << " code " << code << " scale code " << scale;
      return;
    }
    ASSERT_EQ(static_cast<uint32_t>(got), bits(want) >> 16)
        << what << " backend " << gemm_backend_name() << " code " << code << " scale code "
        << scale;
  };
  for (const GemmBackend backend : backends()) {
    set_gemm_backend(backend);
    for (int k = 0; k < 256; ++k) {
      const auto code = static_cast<uint8_t>(k);
      const float s = formats::ue8m0_to_float(code);
      const std::vector<uint8_t> s8{code, code}, s4(16, code);
      decode_fp8_tile(w8.data(), s8.data(), 256, 0, 1, got8.data());
      decode_fp4_tile(w4.data(), s4.data(), 512, 0, 1, got4.data());
      for (int c = 0; c < 256; ++c) {
        check(got8[static_cast<size_t>(c)], formats::e4m3_to_float(static_cast<uint8_t>(c)) * s,
              "e4m3", c, k);
      }
      for (int i = 0; i < 512; ++i) {
        const uint8_t pair = w4[static_cast<size_t>(i / 2)];
        check(got4[static_cast<size_t>(i)],
              formats::e2m1_to_float(i % 2 == 0 ? pair & 0xF : pair >> 4) * s, "e2m1", i, k);
      }
    }
  }
}

// A MoE layer's experts in one pass: each row's output is the single product's, bit for bit,
// whatever the other experts' rows (none, one, many).
TEST_F(LinearLowPrecision, GroupedExpertsEqualTheirSingleProducts) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255), scale_code(118, 130);
  const int64_t in = 256, out = 200, experts = 5;
  const std::vector<int64_t> offsets{0, 3, 3, 4, 13, 20};  // expert 1 has no rows
  const int64_t rows = offsets.back();
  std::vector<float> x(static_cast<size_t>(rows * in));
  for (float& v : x) v = normal(rng);
  std::vector<std::vector<uint8_t>> w8, s8, w4, s4;
  for (int64_t e = 0; e < experts; ++e) {
    w8.emplace_back(static_cast<size_t>(out * in));
    for (uint8_t& b : w8.back()) b = static_cast<uint8_t>(byte(rng) & 0xF7);  // no NaN codes
    s8.emplace_back(static_cast<size_t>(2 * 2));
    for (uint8_t& c : s8.back()) c = static_cast<uint8_t>(scale_code(rng));
    w4.emplace_back(static_cast<size_t>(out * in / 2));
    for (uint8_t& b : w4.back()) b = static_cast<uint8_t>(byte(rng));
    s4.emplace_back(static_cast<size_t>(out * in / 32));
    for (uint8_t& c : s4.back()) c = static_cast<uint8_t>(scale_code(rng));
  }
  auto pointers = [](const std::vector<std::vector<uint8_t>>& v) {
    std::vector<const uint8_t*> p;
    for (const auto& b : v) p.push_back(b.data());
    return p;
  };
  for (const GemmBackend backend : backends()) {
    set_gemm_backend(backend);
    for (const int threads : {1, 2}) {
      set_compute_threads(threads);
      for (const bool fp4 : {false, true}) {
        std::vector<float> grouped(static_cast<size_t>(rows * out)), single(grouped.size());
        const auto w = pointers(fp4 ? w4 : w8), sc = pointers(fp4 ? s4 : s8);
        (fp4 ? grouped_linear_fp4 : grouped_linear_fp8)(x.data(), in, w.data(), sc.data(), experts,
                                                        offsets.data(), out, grouped.data());
        for (int64_t e = 0; e < experts; ++e) {
          const int64_t r0 = offsets[static_cast<size_t>(e)];
          const int64_t n = offsets[static_cast<size_t>(e) + 1] - r0;
          (fp4 ? linear_fp4 : linear_fp8)(x.data() + r0 * in, n, in, w[static_cast<size_t>(e)],
                                          sc[static_cast<size_t>(e)], out,
                                          single.data() + r0 * out);
        }
        for (size_t i = 0; i < grouped.size(); ++i) {
          ASSERT_EQ(bits(grouped[i]), bits(single[i]))
              << (fp4 ? "fp4" : "fp8") << " backend " << gemm_backend_name() << " threads "
              << threads << " at row " << i / static_cast<size_t>(out);
        }
      }
    }
  }
}

TEST_F(LinearLowPrecision, RaggedProductsEqualTheDefinition) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255), scale_code(118, 130);
  auto random_bytes = [&](size_t n, bool nan_free) {
    std::vector<uint8_t> b(n);
    for (uint8_t& v : b) {
      v = static_cast<uint8_t>(byte(rng));
      if (nan_free && (v & 0x7F) == 0x7F) v = static_cast<uint8_t>(v - 1);
    }
    return b;
  };
  auto scales = [&](size_t n) {
    std::vector<uint8_t> b(n);
    for (uint8_t& v : b) v = static_cast<uint8_t>(scale_code(rng));
    return b;
  };
  auto magnitudes = [](std::vector<uint8_t> b, uint8_t keep) {
    for (uint8_t& v : b) v &= keep;
    return b;
  };
  // got against want, each output within 4e-6 of its sum of |terms| (the definition on |x| and
  // |W|): fp32 sums in another order.
  auto check = [](const std::vector<float>& got, const std::vector<float>& want,
                  const std::vector<float>& terms, const char* what) {
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 4e-6 * terms[i] + 1e-30)
          << what << " backend " << gemm_backend_name() << " threads " << compute_threads()
          << " at " << i;
    }
  };
  for (const GemmBackend backend : backends()) {
    set_gemm_backend(backend);
    for (const int threads : {1, 2}) {
      set_compute_threads(threads);
      for (const int64_t rows : {1, 3, 8, 13}) {
        for (const int64_t in : {32, 96, 200, 512}) {
          for (const int64_t out : {1, 5, 17, 129, 300}) {
            std::vector<float> x(static_cast<size_t>(rows * in)), ax(x.size());
            for (size_t i = 0; i < x.size(); ++i) {
              x[i] = normal(rng);
              ax[i] = std::fabs(x[i]);
            }
            std::vector<float> got(static_cast<size_t>(rows * out)), want(got.size());
            std::vector<float> terms(got.size());
            const auto w8 = random_bytes(static_cast<size_t>(out * in), true);
            const auto s8 = scales(static_cast<size_t>(((out + 127) / 128) * ((in + 127) / 128)));
            linear_fp8(x.data(), rows, in, w8.data(), s8.data(), out, got.data());
            linear_fp8_reference(x.data(), rows, in, w8.data(), s8.data(), out, want.data());
            linear_fp8_reference(ax.data(), rows, in, magnitudes(w8, 0x7F).data(), s8.data(), out,
                                 terms.data());
            check(got, want, terms, "fp8");
            if (in % 32 != 0) continue;
            const auto w4 = random_bytes(static_cast<size_t>(out * in / 2), false);
            const auto s4 = scales(static_cast<size_t>(out * in / 32));
            linear_fp4(x.data(), rows, in, w4.data(), s4.data(), out, got.data());
            linear_fp4_reference(x.data(), rows, in, w4.data(), s4.data(), out, want.data());
            linear_fp4_reference(ax.data(), rows, in, magnitudes(w4, 0x77).data(), s4.data(), out,
                                 terms.data());
            check(got, want, terms, "fp4");
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::ops
