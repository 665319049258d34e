// The device layer's ops on every backend this build has, against the cpu backend (the oracle),
// as ggml's test-backend-ops does: small random shapes and DeepSeek-V4-Flash widths. Backends:
// the emulated CUDA device (the kernels of core/cuda on the SIMT emulator, always) and a real GPU
// when the native module finds one. A failure prints the op, the shape and the worst element.
//
// Tolerances (fp32 everywhere; the difference is the order of the sums):
//   rms_norm  |d| <= 2e-6 |ref| + 1e-6          sums of squares in another order
//   swiglu    |d| <= 4e-6 |ref| + 1e-7          expf against glibc's vector exp (1 ulp each)
//   embed     exact                             a bf16 value widens exactly
//   linear    |d| <= 2e-5 sum_i |x_i w_i| + 1e-7   sums over `in` in another order
//   rope      |d| <= 2e-5 |x| + 2e-6            cosf / sinf of the same fp32 angle (few ulp)
//   routing   experts equal; weights |d| <= 2e-6 |ref|   log1pf / expf of the same logits
//   mHC       logits |d| <= 2e-5 sum |x fn| * scale; coefficients, mixes |d| <= 2e-6 |ref| + 1e-6
//             (expf of the same values; the mixes sum n products in the CPU's order)
//   row scan  exact (maxima of the same values); a non-finite row: finite = false, argmax -1
//   gather    exact; combine |d| <= 2e-6 |ref| + 1e-6 (the same products and order)
//   fp8, fp4  |d| <= 2e-5 sum |q_i s w_i| + 1e-7   the same quantised activations on both sides
//             (number_formats.cuh is one source), sums in another order
#include "device/device_ops.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "device/cpu_device.hpp"
#include "device/open_device.hpp"
#include "device_backends.hpp"
#include "kernels/number_formats.cuh"
#include "tessera/plugin_abi.h"
#include "weights/numeric_formats.hpp"

namespace tessera::device {
namespace {

class BackendOps : public ::testing::TestWithParam<size_t> {
 protected:
  Backend& backend() { return backends().at(GetParam()); }
};

void check_rms_norm(Device& dev, int64_t rows, int64_t width, bool weighted, uint32_t seed,
                    bool bf16_weight = false) {
  const Stream s = dev.create_stream();
  const Stream cs = cpu().create_stream();
  std::vector<float> x = random_floats(static_cast<size_t>(rows * width), seed, 3.0f);
  std::vector<float> w = random_floats(static_cast<size_t>(width), seed + 1);
  const std::vector<uint16_t> w16 = random_bf16(static_cast<size_t>(width), seed + 1);
  DeviceBuffer dx = upload(dev, s, x), dw = upload(dev, s, w), dw16 = upload(dev, s, w16);
  if (bf16_weight) {
    dev.ops().rms_norm_bf16(s, dx.as<float>(), rows, width, dw16.as<uint16_t>(), 1e-6f);
    cpu().ops().rms_norm_bf16(cs, x.data(), rows, width, w16.data(), 1e-6f);
  } else {
    dev.ops().rms_norm(s, dx.as<float>(), rows, width, weighted ? dw.as<float>() : nullptr, 1e-6f);
    cpu().ops().rms_norm(cs, x.data(), rows, width, weighted ? w.data() : nullptr, 1e-6f);
  }
  const std::vector<float> got = download<float>(dev, s, dx, x.size());
  expect_close("rms_norm " + std::to_string(rows) + "x" + std::to_string(width), got, x,
               [&](size_t i) { return 2e-6 * std::fabs(x[i]) + 1e-6; });
}

TEST_P(BackendOps, RmsNorm) {
  Device& dev = *backend().device;
  check_rms_norm(dev, 3, 40, true, 1);
  check_rms_norm(dev, 5, 257, false, 2);
  check_rms_norm(dev, 2, 4096, true, 3);    // Flash hidden
  check_rms_norm(dev, 4, 16384, false, 4);  // Flash mHC rows: 4 streams x 4096
}

TEST_P(BackendOps, Swiglu) {
  Device& dev = *backend().device;
  const Stream s = dev.create_stream();
  for (const float limit : {0.0f, 7.0f}) {
    for (const int64_t n : {int64_t{33}, int64_t{2 * 2048 + 5}}) {  // Flash expert width 2048
      std::vector<float> g = random_floats(static_cast<size_t>(n), 10 + n, 5.0f);
      const std::vector<float> u = random_floats(static_cast<size_t>(n), 11 + n, 5.0f);
      DeviceBuffer dg = upload(dev, s, g), du = upload(dev, s, u);
      dev.ops().swiglu(s, dg.as<float>(), du.as<float>(), n, limit);
      const std::vector<float> got = download<float>(dev, s, dg, g.size());
      cpu().ops().swiglu(cpu().create_stream(), g.data(), u.data(), n, limit);
      expect_close("swiglu n=" + std::to_string(n) + " limit=" + std::to_string(limit), got, g,
                   [&](size_t i) { return 4e-6 * std::fabs(g[i]) + 1e-7; });
    }
  }
}

TEST_P(BackendOps, EmbedBf16) {
  Device& dev = *backend().device;
  const Stream s = dev.create_stream();
  const int64_t vocab = 97, width = 4096, rows = 5, copies = 4;  // Flash: hidden 4096, hc 4
  const std::vector<uint16_t> table = random_bf16(static_cast<size_t>(vocab * width), 20);
  const std::vector<int32_t> ids = {0, 96, 5, 5, 42};
  DeviceBuffer dt = upload(dev, s, table), di = upload(dev, s, ids);
  DeviceBuffer dout = dev.allocate(static_cast<size_t>(rows * copies * width) * sizeof(float));
  dev.ops().embed_bf16(s, dt.as<uint16_t>(), width, di.as<int32_t>(), rows, copies,
                       dout.as<float>());
  const std::vector<float> got =
      download<float>(dev, s, dout, static_cast<size_t>(rows * copies * width));
  std::vector<float> want(got.size());
  cpu().ops().embed_bf16(cpu().create_stream(), table.data(), width, ids.data(), rows, copies,
                         want.data());
  expect_close("embed_bf16", got, want, [](size_t) { return 0.0; });
}

void check_linear(Device& dev, int64_t rows, int64_t in, int64_t out, uint32_t seed) {
  const Stream s = dev.create_stream();
  const std::vector<float> x = random_floats(static_cast<size_t>(rows * in), seed);
  const std::vector<uint16_t> w =
      random_bf16(static_cast<size_t>(out * in), seed + 1, 1.0f / std::sqrt(float(in)));
  DeviceBuffer dx = upload(dev, s, x), dw = upload(dev, s, w);
  DeviceBuffer dy = dev.allocate(static_cast<size_t>(rows * out) * sizeof(float));
  dev.ops().linear_bf16(s, dx.as<float>(), rows, in, dw.as<uint16_t>(), out, dy.as<float>());
  const std::vector<float> got = download<float>(dev, s, dy, static_cast<size_t>(rows * out));
  std::vector<float> want(got.size());
  cpu().ops().linear_bf16(cpu().create_stream(), x.data(), rows, in, w.data(), out, want.data());
  std::vector<double> magnitude(got.size(), 0.0);  // sum_i |x_i w_i| of each output
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) {
        uint32_t bits = static_cast<uint32_t>(w[o * in + i]) << 16;
        float wv;
        std::memcpy(&wv, &bits, 4);
        magnitude[r * out + o] += std::fabs(double(x[r * in + i]) * wv);
      }
  expect_close("linear_bf16 " + std::to_string(rows) + "x" + std::to_string(in) + " -> " +
                   std::to_string(out),
               got, want, [&](size_t i) { return 2e-5 * magnitude[i] + 1e-7; });
}

TEST_P(BackendOps, LinearBf16) {
  Device& dev = *backend().device;
  check_linear(dev, 1, 40, 9, 30);
  check_linear(dev, 7, 129, 33, 31);     // rows beyond one pass, odd widths
  check_linear(dev, 2, 4096, 1024, 32);  // Flash wq_a: hidden 4096 -> q LoRA 1024
  // From 16 rows on, the tensor-core kernel (linear_bf16_mma.cu, x split into three bf16 parts):
  // whole and partial 64 x 64 tiles, partial 64-input chunks, odd widths.
  check_linear(dev, 16, 300, 130, 33);
  check_linear(dev, 70, 512, 192, 34);
  check_linear(dev, 33, 129, 65, 35);
}

TEST_P(BackendOps, LinearF32AndEmbedF32) {
  Device& dev = *backend().device;
  const Stream s = dev.create_stream();
  for (const auto& [rows, in, out] : {std::array<int64_t, 3>{1, 40, 9}, {6, 257, 70}}) {
    const std::vector<float> x = random_floats(static_cast<size_t>(rows * in), 40 + in);
    const std::vector<float> w = random_floats(static_cast<size_t>(out * in), 41 + in, 0.1f);
    DeviceBuffer dx = upload(dev, s, x), dw = upload(dev, s, w);
    DeviceBuffer dy = dev.allocate(static_cast<size_t>(rows * out) * sizeof(float));
    dev.ops().linear_f32(s, dx.as<float>(), rows, in, dw.as<float>(), out, dy.as<float>());
    const std::vector<float> got = download<float>(dev, s, dy, static_cast<size_t>(rows * out));
    std::vector<float> want(got.size()), magnitude(got.size(), 0.0f);
    cpu().ops().linear_f32(cpu().create_stream(), x.data(), rows, in, w.data(), out, want.data());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i)
          magnitude[r * out + o] += std::fabs(x[r * in + i] * w[o * in + i]);
    expect_close("linear_f32 in=" + std::to_string(in), got, want,
                 [&](size_t i) { return 2e-5 * magnitude[i] + 1e-7; });
  }
  const int64_t vocab = 11, width = 300, rows = 3, copies = 2;
  const std::vector<float> table = random_floats(static_cast<size_t>(vocab * width), 43);
  const std::vector<int32_t> ids = {10, 0, 10};
  DeviceBuffer dt = upload(dev, s, table), di = upload(dev, s, ids);
  DeviceBuffer dout = dev.allocate(static_cast<size_t>(rows * copies * width) * sizeof(float));
  dev.ops().embed_f32(s, dt.as<float>(), width, di.as<int32_t>(), rows, copies, dout.as<float>());
  std::vector<float> want(static_cast<size_t>(rows * copies * width));
  cpu().ops().embed_f32(cpu().create_stream(), table.data(), width, ids.data(), rows, copies,
                        want.data());
  expect_close("embed_f32", download<float>(dev, s, dout, want.size()), want,
               [](size_t) { return 0.0; });
}

// The two data movers are exact: a product by one float, and copies.
TEST_P(BackendOps, ScaleAndSwapOuterAxes) {
  Device& dev = *backend().device;
  const Stream s = dev.create_stream();
  std::vector<float> x = random_floats(5000, 50);  // beyond one block of the grid-stride loop
  DeviceBuffer dx = upload(dev, s, x);
  dev.ops().scale(s, dx.as<float>(), static_cast<int64_t>(x.size()), 0.0883883f);
  cpu().ops().scale(cpu().create_stream(), x.data(), static_cast<int64_t>(x.size()), 0.0883883f);
  expect_close("scale", download<float>(dev, s, dx, x.size()), x, [](size_t) { return 0.0; });
  const int64_t A = 5, B = 3, C = 129;  // tokens, groups, a group's inputs
  const std::vector<float> y = random_floats(static_cast<size_t>(A * B * C), 51);
  DeviceBuffer dy = upload(dev, s, y), dout = dev.allocate(y.size() * sizeof(float));
  dev.ops().swap_outer_axes(s, dy.as<float>(), A, B, C, dout.as<float>());
  std::vector<float> want(y.size());
  cpu().ops().swap_outer_axes(cpu().create_stream(), y.data(), A, B, C, want.data());
  EXPECT_EQ(want[(2 * A + 4) * C + 7], y[(4 * B + 2) * C + 7]);  // out[b=2, a=4] = x[a=4, b=2]
  expect_close("swap_outer_axes", download<float>(dev, s, dout, y.size()), want,
               [](size_t) { return 0.0; });
}

// The bf16 collectives' casts: round to nearest even (ties both ways, NaN, infinities, the
// largest values), then widening: bit for bit the cpu backend's.
TEST_P(BackendOps, Bf16RoundingAndWidening) {
  Device& dev = *backend().device;
  const Stream s = dev.create_stream();
  std::vector<float> x = random_floats(5000, 52, 100.0f);
  const float specials[] = {
      1.0f + 0x1p-8f, 1.0f + 0x1p-7f + 0x1p-8f, -(1.0f + 0x1p-8f),  // ties
      3.3895314e38f,  -__builtin_inff(),        __builtin_inff(),  __builtin_nanf(""), 1e-40f,
      -0.0f};
  std::copy(std::begin(specials), std::end(specials), x.begin());
  const auto n = static_cast<int64_t>(x.size());
  DeviceBuffer dx = upload(dev, s, x), dh = dev.allocate(x.size() * sizeof(uint16_t));
  DeviceBuffer dy = dev.allocate(x.size() * sizeof(float));
  dev.ops().round_to_bf16(s, dx.as<float>(), n, dh.as<uint16_t>());
  dev.ops().widen_bf16(s, dh.as<uint16_t>(), n, dy.as<float>());
  std::vector<uint16_t> want(x.size());
  std::vector<float> widened(x.size());
  cpu().ops().round_to_bf16(cpu().create_stream(), x.data(), n, want.data());
  cpu().ops().widen_bf16(cpu().create_stream(), want.data(), n, widened.data());
  EXPECT_EQ(want[0], 0x3F80);  // 1 + 2^-8: the tie goes to the even 1.0
  EXPECT_EQ(want[1], 0x3F82);  // 1 + 2^-7 + 2^-8: to the even 1 + 2^-6
  const std::vector<uint16_t> bits = download<uint16_t>(dev, s, dh, x.size());
  const std::vector<float> got = download<float>(dev, s, dy, x.size());
  auto is_nan = [](uint16_t h) { return (h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0; };
  for (size_t i = 0; i < x.size(); ++i) {
    if (is_nan(want[i])) {  // any NaN (a GPU gives its canonical one)
      ASSERT_TRUE(is_nan(bits[i]) && std::isnan(got[i])) << "value " << i << ": " << bits[i];
      continue;
    }
    ASSERT_EQ(bits[i], want[i]) << "value " << i << " = " << x[i];
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &widened[i], 4);
    ASSERT_EQ(a, b) << "widened value " << i;
  }
}

void check_rope(Device& dev, int64_t tokens, int64_t heads, int64_t width, int64_t rope_dim,
                bool inverse, uint32_t seed) {
  const Stream s = dev.create_stream();
  std::vector<float> x = random_floats(static_cast<size_t>(tokens * heads * width), seed);
  const std::vector<float> x0 = x;
  std::vector<int32_t> positions(static_cast<size_t>(tokens));
  for (int64_t t = 0; t < tokens; ++t) positions[t] = static_cast<int32_t>(t * 977 + 3);
  std::vector<float> inv_freq(static_cast<size_t>(rope_dim / 2));
  for (size_t i = 0; i < inv_freq.size(); ++i)
    inv_freq[i] = 1.0f / std::pow(10000.0f, 2.0f * float(i) / float(rope_dim));
  DeviceBuffer dx = upload(dev, s, x), dp = upload(dev, s, positions),
               df = upload(dev, s, inv_freq);
  dev.ops().rope(s, dx.as<float>(), tokens, heads, width, rope_dim, dp.as<int32_t>(),
                 df.as<float>(), inverse);
  const std::vector<float> got = download<float>(dev, s, dx, x.size());
  cpu().ops().rope(cpu().create_stream(), x.data(), tokens, heads, width, rope_dim,
                   positions.data(), inv_freq.data(), inverse);
  expect_close("rope " + std::to_string(heads) + "x" + std::to_string(width), got, x,
               [&](size_t i) { return 2e-5 * std::fabs(x0[i]) + 2e-6; });
}

TEST_P(BackendOps, Rope) {
  Device& dev = *backend().device;
  check_rope(dev, 3, 2, 16, 8, false, 40);
  check_rope(dev, 3, 64, 512, 64, false, 41);  // Flash: 64 heads x 512, rope 64
  check_rope(dev, 2, 64, 512, 64, true, 42);   // the inverse on the attention output
}

// Random FP8 weights of a Flash-like layer: e4m3 codes of N(0, 1/sqrt(in)) values and UE8M0 block
// scales near 2^-3 .. 2^0 (NaN codes avoided), as a checkpoint stores them.
// Runs the op on `dev` and on the cpu; compares with the tolerance of the header, and the cpu's
// result with the unquantised product x . dequant(W)^T within e4m3's rounding of x (2^-4 of each
// |x_i w_i|): a wrong scale or a wrong block would fail that.
void check_quantised(Device& dev, bool fp4, int64_t rows, int64_t in, int64_t out, uint32_t seed) {
  const Stream s = dev.create_stream();
  const std::vector<float> x = random_floats(static_cast<size_t>(rows * in), seed, 2.0f);
  std::vector<uint8_t> w, scales;
  std::vector<float> dequant(static_cast<size_t>(out * in));
  if (!fp4) {
    w = random_e4m3(static_cast<size_t>(out * in), seed + 1, 4.0f / std::sqrt(float(in)));
    const int64_t blocks = (in + 127) / 128;
    scales = random_scales(static_cast<size_t>((out + 127) / 128 * blocks), seed + 2);
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i)
        dequant[o * in + i] = weights::fp8_e4m3_to_f32(w[o * in + i]) *
                              weights::ue8m0_to_f32(scales[o / 128 * blocks + i / 128]);
  } else {
    std::mt19937 rng(seed + 1);
    w.resize(static_cast<size_t>(out * in / 2));
    for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
    scales = random_scales(static_cast<size_t>(out * in / 32), seed + 2);
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) {
        const uint8_t pair = w[o * (in / 2) + i / 2];
        dequant[o * in + i] = weights::fp4_e2m1_to_f32(i % 2 ? pair >> 4 : pair & 0xF) *
                              weights::ue8m0_to_f32(scales[o * (in / 32) + i / 32]);
      }
  }
  DeviceBuffer dx = upload(dev, s, x), dw = upload(dev, s, w), ds = upload(dev, s, scales);
  DeviceBuffer dy = dev.allocate(static_cast<size_t>(rows * out) * sizeof(float));
  const auto product = fp4 ? &DeviceOps::linear_fp4 : &DeviceOps::linear_fp8;
  (dev.ops().*product)(s, dx.as<float>(), rows, in, dw.as<uint8_t>(), ds.as<uint8_t>(), out,
                       dy.as<float>());
  const std::vector<float> got = download<float>(dev, s, dy, static_cast<size_t>(rows * out));
  std::vector<float> want(got.size()), exact(got.size());
  std::vector<double> magnitude(got.size(), 0.0);
  (cpu().ops().*product)(cpu().create_stream(), x.data(), rows, in, w.data(), scales.data(), out,
                         want.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double sum = 0;
      for (int64_t i = 0; i < in; ++i) {
        sum += double(x[r * in + i]) * dequant[o * in + i];
        magnitude[r * out + o] += std::fabs(double(x[r * in + i]) * dequant[o * in + i]);
      }
      exact[r * out + o] = static_cast<float>(sum);
    }
  const std::string what = std::string(fp4 ? "linear_fp4 " : "linear_fp8 ") + std::to_string(rows) +
                           "x" + std::to_string(in) + " -> " + std::to_string(out);
  // |q s - x| <= 2^-4 |x| for normal e4m3 values, plus the subnormal step of small ones.
  expect_close(what + " (cpu against the unquantised product)", want, exact,
               [&](size_t i) { return 0.0625 * magnitude[i] + 1e-3; });
  expect_close(what, got, want, [&](size_t i) { return 2.5e-5 * magnitude[i] + 1e-6; });
}

TEST_P(BackendOps, LinearFp8) {
  Device& dev = *backend().device;
  check_quantised(dev, false, 1, 128, 8, 50);
  check_quantised(dev, false, 5, 300, 130, 51);   // partial blocks on both axes
  check_quantised(dev, false, 2, 4096, 512, 52);  // Flash wkv: hidden 4096 -> 512
  // From 16 rows on, the tensor-core kernel (linear_quantised_mma.cu): whole and partial tiles
  // of 64 x 64, partial 128-input blocks, two 128-output scale blocks in one launch.
  check_quantised(dev, false, 16, 300, 130, 53);
  check_quantised(dev, false, 70, 512, 192, 54);
  check_quantised(dev, false, 33, 1024, 64, 55);
}

TEST_P(BackendOps, LinearFp4) {
  Device& dev = *backend().device;
  check_quantised(dev, true, 1, 64, 8, 60);
  check_quantised(dev, true, 3, 4096, 64, 61);   // Flash expert w1: 4096 -> (2048, fewer here)
  check_quantised(dev, true, 2, 2048, 128, 62);  // Flash expert w2: 2048 -> (4096, fewer here)
  check_quantised(dev, true, 16, 96, 72, 63);    // tensor cores: a partial 128-input block
  check_quantised(dev, true, 65, 512, 128, 64);  // two row tiles
}

// Flash's router: 256 experts, top 6, learned (with the correction bias) and hashed layers;
// a token id outside tid2eid is reported as the lowest bad token; with `ties` (no bias) one
// token's logits are all equal, so its experts are the lowest six.
void check_routing(Device& dev, bool hashed, bool bad_id, bool ties = false) {
  const Stream s = dev.create_stream();
  const int64_t E = 256, K = 6, tokens = 5, vocab = 11;
  std::vector<float> logits = random_floats(static_cast<size_t>(tokens * E), 70, 3.0f);
  std::vector<float> bias = random_floats(static_cast<size_t>(E), 71, 0.1f);
  if (ties) {
    std::fill(logits.begin() + E, logits.begin() + 2 * E, 0.5f);
    std::fill(bias.begin(), bias.end(), 0.0f);
  }
  std::vector<int32_t> table(static_cast<size_t>(vocab * K));
  std::mt19937 rng(72);
  for (int32_t& e : table) e = static_cast<int32_t>(rng() % E);
  std::vector<int32_t> ids = {3, 0, 10, 7, 3};
  if (bad_id) ids[2] = static_cast<int32_t>(vocab);
  DeviceBuffer dl = upload(dev, s, logits), db = upload(dev, s, bias), dt = upload(dev, s, table),
               di = upload(dev, s, ids);
  DeviceBuffer dp = dev.allocate(static_cast<size_t>(tokens * K) * 4),
               dw = dev.allocate(static_cast<size_t>(tokens * K) * 4), dbad = dev.allocate(8);
  ops::MoeRouting on_device{E, K, db.as<float>()};
  ops::MoeRouting on_cpu{E, K, bias.data()};
  if (hashed) {
    on_device.tid2eid = dt.as<int32_t>();
    on_cpu.tid2eid = table.data();
    on_device.table_size = on_cpu.table_size = vocab * K;
    on_device.token_ids = di.as<int32_t>();
    on_cpu.token_ids = ids.data();
  }
  on_device.scaling = on_cpu.scaling = 1.5;
  dev.ops().route_tokens(s, on_device, dl.as<float>(), tokens, dp.as<int32_t>(), dw.as<float>(),
                         dbad.as<int64_t>());
  const std::vector<int32_t> picked =
      download<int32_t>(dev, s, dp, static_cast<size_t>(tokens * K));
  const std::vector<float> weights = download<float>(dev, s, dw, static_cast<size_t>(tokens * K));
  const std::vector<int64_t> bad = download<int64_t>(dev, s, dbad, 1);
  std::vector<int32_t> want_picked(picked.size());
  std::vector<float> want_weights(weights.size());
  int64_t want_bad = -1;
  cpu().ops().route_tokens(cpu().create_stream(), on_cpu, logits.data(), tokens, want_picked.data(),
                           want_weights.data(), &want_bad);
  const std::string what = std::string(hashed ? "hash" : "learned") + " routing";
  ASSERT_EQ(bad[0], want_bad) << what;
  EXPECT_EQ(want_bad, bad_id ? 2 : tokens) << what;
  if (ties)
    for (int64_t k = 0; k < K; ++k)
      EXPECT_EQ(want_picked[K + k], k) << "ties go to the lower expert";
  for (int64_t t = 0; t < tokens; ++t) {
    if (t == want_bad) continue;  // unspecified
    for (int64_t k = 0; k < K; ++k) {
      EXPECT_EQ(picked[t * K + k], want_picked[t * K + k]) << what << " token " << t << " k " << k;
      EXPECT_NEAR(weights[t * K + k], want_weights[t * K + k], 2e-6 * want_weights[t * K + k])
          << what << " token " << t << " k " << k;
    }
  }
}

TEST_P(BackendOps, MoeRouting) {
  Device& dev = *backend().device;
  check_routing(dev, false, false);
  check_routing(dev, true, false);
  check_routing(dev, true, true);
  check_routing(dev, false, false, true);
}

// One mHC site at Flash's widths (hc 4 x hidden 4096): every step of hc_pre / hc_post / hc_head
// on the device against the cpu, each step fed the cpu's inputs so a difference is its own.
TEST_P(BackendOps, HyperConnectionMixes) {
  Device& dev = *backend().device;
  const Stream s = dev.create_stream();
  const Stream cs = cpu().create_stream();
  const int64_t T = 3, n = 4, D = 4096, width = n * D, rows = (2 + n) * n;
  const std::vector<float> streams = random_floats(static_cast<size_t>(T * width), 80);
  const std::vector<float> fn =
      random_floats(static_cast<size_t>(rows * width), 81, 1.0f / std::sqrt(float(width)));
  const std::vector<float> scale = {0.7f, 0.4f, 1.3f};
  const std::vector<float> base = random_floats(static_cast<size_t>(rows), 82, 0.5f);
  const std::vector<float> out = random_floats(static_cast<size_t>(T * D), 83);
  DeviceBuffer d_streams = upload(dev, s, streams), d_fn = upload(dev, s, fn),
               d_scale = upload(dev, s, scale), d_base = upload(dev, s, base),
               d_out = upload(dev, s, out);
  const CpuOps& ops = static_cast<const CpuOps&>(cpu().ops());

  // The site's logits.
  DeviceBuffer d_mix = dev.allocate(static_cast<size_t>(T * rows) * 4);
  dev.ops().hc_mix_logits(s, d_streams.as<float>(), T, width, d_fn.as<float>(), rows, 1e-6f,
                          d_mix.as<float>());
  std::vector<float> mix(static_cast<size_t>(T * rows));
  ops.hc_mix_logits(cs, streams.data(), T, width, fn.data(), rows, 1e-6f, mix.data());
  std::vector<double> magnitude(mix.size(), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    double sq = 0;
    for (int64_t i = 0; i < width; ++i)
      sq += double(streams[t * width + i]) * streams[t * width + i];
    const double r = 1.0 / std::sqrt(sq / double(width) + 1e-6);
    for (int64_t o = 0; o < rows; ++o) {
      for (int64_t i = 0; i < width; ++i)
        magnitude[t * rows + o] += std::fabs(double(streams[t * width + i]) * fn[o * width + i]);
      magnitude[t * rows + o] *= r;
    }
  }
  expect_close("hc_mix_logits", download<float>(dev, s, d_mix, mix.size()), mix,
               [&](size_t i) { return 2e-5 * magnitude[i] + 1e-6; });

  // The coefficients, from the cpu's logits on both sides.
  dev.copy(d_mix.data(), mix.data(), mix.size() * 4, CopyKind::kHostToDevice, s);
  DeviceBuffer d_pre = dev.allocate(T * n * 4), d_post = dev.allocate(T * n * 4),
               d_comb = dev.allocate(T * n * n * 4);
  dev.ops().hc_coefficients(s, {d_scale.as<float>(), d_base.as<float>(), n, 20, 1e-6f},
                            d_mix.as<float>(), T, d_pre.as<float>(), d_post.as<float>(),
                            d_comb.as<float>());
  std::vector<float> pre(T * n), post(T * n), comb(T * n * n);
  ops.hc_coefficients(cs, {scale.data(), base.data(), n, 20, 1e-6f}, mix.data(), T, pre.data(),
                      post.data(), comb.data());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = 0; k < n; ++k) {  // Sinkhorn ends on columns: each sums to ~1
      double column = 0;
      for (int64_t j = 0; j < n; ++j) column += comb[(t * n + j) * n + k];
      EXPECT_NEAR(column, 1.0, 1e-4) << "token " << t << " column " << k;
    }
  const auto relative = [](const std::vector<float>& want) {
    return [&want](size_t i) { return 2e-6 * std::fabs(want[i]) + 1e-6; };
  };
  expect_close("hc pre", download<float>(dev, s, d_pre, pre.size()), pre, relative(pre));
  expect_close("hc post", download<float>(dev, s, d_post, post.size()), post, relative(post));
  expect_close("hc comb", download<float>(dev, s, d_comb, comb.size()), comb, relative(comb));

  // The layer input and the streams' update, from the cpu's coefficients.
  dev.copy(d_pre.data(), pre.data(), pre.size() * 4, CopyKind::kHostToDevice, s);
  dev.copy(d_post.data(), post.data(), post.size() * 4, CopyKind::kHostToDevice, s);
  dev.copy(d_comb.data(), comb.data(), comb.size() * 4, CopyKind::kHostToDevice, s);
  DeviceBuffer d_x = dev.allocate(T * D * 4);
  dev.ops().hc_pre_mix(s, d_pre.as<float>(), d_streams.as<float>(), T, n, D, d_x.as<float>());
  std::vector<float> x(T * D);
  ops.hc_pre_mix(cs, pre.data(), streams.data(), T, n, D, x.data());
  expect_close("hc_pre_mix", download<float>(dev, s, d_x, x.size()), x,
               [&](size_t i) { return 2e-6 * std::fabs(x[i]) + 1e-6; });
  dev.ops().hc_post_mix(s, d_post.as<float>(), d_comb.as<float>(), d_out.as<float>(), T, n, D,
                        d_streams.as<float>());
  std::vector<float> updated = streams;
  ops.hc_post_mix(cs, post.data(), comb.data(), out.data(), T, n, D, updated.data());
  expect_close("hc_post_mix", download<float>(dev, s, d_streams, updated.size()), updated,
               [&](size_t i) { return 2e-6 * std::fabs(updated[i]) + 1e-6; });

  // The head's mix over the updated streams (its logits: the first n of each token's).
  std::vector<float> head_mix(T * n);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = 0; k < n; ++k) head_mix[t * n + k] = mix[t * rows + k];
  DeviceBuffer d_head_mix = upload(dev, s, head_mix), d_y = dev.allocate(T * D * 4);
  dev.ops().hc_head_mix(s, d_head_mix.as<float>(), d_scale.as<float>(), d_base.as<float>(), 1e-6f,
                        d_streams.as<float>(), T, n, D, d_y.as<float>());
  std::vector<float> y(T * D);
  ops.hc_head_mix(cs, head_mix.data(), scale.data(), base.data(), 1e-6f, updated.data(), T, n, D,
                  y.data());
  expect_close("hc_head_mix", download<float>(dev, s, d_y, y.size()), y,
               [&](size_t i) { return 2e-6 * std::fabs(y[i]) + 1e-6; });
}

// The head's row scans: Flash's vocabulary (129280: a partial last block) and a small one, a
// row whose max is tied (the lower column wins), and a row with a NaN.
void check_scans(Device& dev, int64_t vocab, uint32_t seed) {
  const Stream s = dev.create_stream();
  const int64_t rows = 4, groups = TS_LOGIT_GROUP_COUNT(vocab);
  std::vector<float> logits = random_floats(static_cast<size_t>(rows * vocab), seed, 4.0f);
  logits[1 * vocab + vocab - 1] = 100.0f;  // row 1: the max twice, the lower column wins
  logits[1 * vocab + vocab / 3] = 100.0f;
  logits[2 * vocab + 7] = std::nanf("");
  DeviceBuffer dl = upload(dev, s, logits);
  DeviceBuffer ds = dev.allocate(rows * sizeof(ops::RowScan)),
               dg = dev.allocate(static_cast<size_t>(rows * groups) * 4);
  dev.ops().scan_rows(s, dl.as<float>(), rows, vocab, ds.as<ops::RowScan>(), dg.as<float>());
  const std::vector<ops::RowScan> got = download<ops::RowScan>(dev, s, ds, rows);
  const std::vector<float> got_groups =
      download<float>(dev, s, dg, static_cast<size_t>(rows * groups));
  std::vector<ops::RowScan> want(rows);
  std::vector<float> want_groups(got_groups.size());
  cpu().ops().scan_rows(cpu().create_stream(), logits.data(), rows, vocab, want.data(),
                        want_groups.data());
  EXPECT_EQ(want[1].argmax, vocab / 3);
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_EQ(got[r].finite, want[r].finite) << "vocab " << vocab << " row " << r;
    EXPECT_EQ(got[r].argmax, want[r].argmax) << "vocab " << vocab << " row " << r;
    if (want[r].finite) {
      EXPECT_EQ(got[r].max, want[r].max) << "vocab " << vocab << " row " << r;
      for (int64_t g = 0; g < groups; ++g)
        ASSERT_EQ(got_groups[r * groups + g], want_groups[r * groups + g])
            << "vocab " << vocab << " row " << r << " group " << g;
    }
  }
  EXPECT_FALSE(want[2].finite);
}

TEST_P(BackendOps, RowScans) {
  Device& dev = *backend().device;
  check_scans(dev, 300, 90);
  check_scans(dev, 129280, 91);
}

// The MoE's gather and combine at Flash's hidden width: 5 tokens, top 6, rows in expert order.
TEST_P(BackendOps, MoeGatherAndCombine) {
  Device& dev = *backend().device;
  const Stream s = dev.create_stream();
  const int64_t T = 5, K = 6, D = 4096, R = T * K;
  const std::vector<float> x = random_floats(static_cast<size_t>(T * D), 100);
  std::vector<int64_t> source(R), src(R);
  std::mt19937 rng(101);
  for (int64_t r = 0; r < R; ++r) source[r] = static_cast<int64_t>(rng() % T);
  for (int64_t i = 0; i < R; ++i) src[i] = (i * 7) % R;  // a permutation of the results
  const std::vector<float> weight = random_floats(static_cast<size_t>(R), 102, 0.3f);
  const std::vector<float> results = random_floats(static_cast<size_t>(R * D), 103);
  std::vector<float> out = random_floats(static_cast<size_t>(T * D), 104);
  DeviceBuffer dx = upload(dev, s, x), dsource = upload(dev, s, source), dsrc = upload(dev, s, src),
               dw = upload(dev, s, weight), dres = upload(dev, s, results),
               dout = upload(dev, s, out), dg = dev.allocate(static_cast<size_t>(R * D) * 4);
  dev.ops().gather_rows(s, dx.as<float>(), dsource.as<int64_t>(), R, D, dg.as<float>());
  std::vector<float> gathered(static_cast<size_t>(R * D));
  cpu().ops().gather_rows(cpu().create_stream(), x.data(), source.data(), R, D, gathered.data());
  expect_close("gather_rows", download<float>(dev, s, dg, gathered.size()), gathered,
               [](size_t) { return 0.0; });
  dev.ops().moe_combine(s, dres.as<float>(), dsrc.as<int64_t>(), dw.as<float>(), T, K, D,
                        dout.as<float>());
  cpu().ops().moe_combine(cpu().create_stream(), results.data(), src.data(), weight.data(), T, K, D,
                          out.data());
  expect_close("moe_combine", download<float>(dev, s, dout, out.size()), out,
               [&](size_t i) { return 2e-6 * std::fabs(out[i]) + 1e-6; });
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendOps, ::testing::Range<size_t>(0, backends().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return backends().at(info.param).name;
                         });

// The emulated stream runs its work only when waited for: a device-to-host copy that was never
// synchronised has not written the host buffer (a missing sync is caught, not hidden).
TEST(DeviceStreams, EmulatedWorkRunsAtSynchronisation) {
  Device& dev = *backends().at(0).device;
  ASSERT_TRUE(dev.emulated());
  const Stream s = dev.create_stream();
  const std::vector<int32_t> values = {1, 2, 3, 4};
  DeviceBuffer d = upload(dev, s, values);
  std::vector<int32_t> host(4, -1);
  dev.copy(host.data(), d.data(), 16, CopyKind::kDeviceToHost, s);
  EXPECT_EQ(host, std::vector<int32_t>(4, -1)) << "the copy ran before the stream was waited for";
  dev.synchronize(s);
  EXPECT_EQ(host, values);
}

// An event orders two streams without a host wait: b's copy runs after a's upload.
TEST(DeviceStreams, EventOrdersStreams) {
  Device& dev = *backends().at(0).device;
  const Stream a = dev.create_stream(), b = dev.create_stream();
  const Event done = dev.create_event();
  DeviceBuffer d = dev.allocate(16);
  dev.fill(d.data(), 0, 16, a);
  const std::vector<int32_t> values = {5, 6, 7, 8};
  dev.copy(d.data(), values.data(), 16, CopyKind::kHostToDevice, a);
  dev.record(done, a);
  dev.wait(b, done);
  std::vector<int32_t> host(4, -1);
  dev.copy(host.data(), d.data(), 16, CopyKind::kDeviceToHost, b);
  dev.synchronize(b);  // only b: a runs up to the event because b waits on it
  EXPECT_EQ(host, values);
}

// An op refuses arguments its kernel cannot take, naming the op and the value.
TEST(DeviceStreams, BadArgumentsAreRefusedNamingTheOp) {
  Device& dev = *backends().at(0).device;
  const Stream s = dev.create_stream();
  DeviceBuffer x = dev.allocate(64 * sizeof(float));
  try {
    dev.ops().rope(s, x.as<float>(), 1, 1, 8, 9, nullptr, nullptr, false);
    FAIL() << "an odd rope_dim was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rope"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rope_dim 9"), std::string::npos) << e.what();
  }
}

// The one e4m3 encoder the cpu oracle and the kernels share: every finite code round-trips, and
// every float encodes to a nearest code (ties to the even code), saturating at +-448.
TEST(NumberFormats, E4m3EncodesToTheNearestCode) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;  // NaN
    const float v = weights::fp8_e4m3_to_f32(static_cast<uint8_t>(c));
    EXPECT_EQ(formats::e4m3_to_float(static_cast<uint8_t>(c)), v) << "code " << c;
    const uint8_t back = formats::float_to_e4m3(v);
    EXPECT_TRUE(back == c || (v == 0.0f && (back & 0x7F) == 0))
        << "code " << c << " -> " << int(back);
  }
  std::vector<float> codes;
  for (int c = 0; c < 0x7F; ++c) codes.push_back(weights::fp8_e4m3_to_f32(static_cast<uint8_t>(c)));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> log2_magnitude(-12.0f, 9.5f);
  for (int n = 0; n < 200000; ++n) {
    const float v = std::exp2(log2_magnitude(rng));
    const float got = weights::fp8_e4m3_to_f32(formats::float_to_e4m3(v));
    float best = codes[0];
    for (float c : codes)
      if (std::fabs(c - v) < std::fabs(best - v)) best = c;
    if (v >= 448.0f) best = 448.0f;
    ASSERT_EQ(std::fabs(got - v), std::fabs(best - v)) << "v = " << v << " gave " << got;
    ASSERT_EQ(weights::fp8_e4m3_to_f32(formats::float_to_e4m3(-v)), -got);
  }
  EXPECT_EQ(formats::float_to_e4m3(1.0625f), 0x38);  // tie between 1 and 1.125: even (1.0)
  EXPECT_EQ(formats::float_to_e4m3(1.1875f), 0x3A);  // tie between 1.125 and 1.25: even (1.25)
  EXPECT_EQ(formats::e4m3_block_scale(448.0f), 1.0f);
  EXPECT_EQ(formats::e4m3_block_scale(449.0f), 2.0f);
  EXPECT_EQ(formats::e4m3_block_scale(0.0f), std::exp2(std::ceil(std::log2(1e-4f / 448.0f))));
  for (int e = 1; e < 255; ++e)
    EXPECT_EQ(formats::ue8m0_to_float(static_cast<uint8_t>(e)),
              weights::ue8m0_to_f32(static_cast<uint8_t>(e)));
  for (int n = 0; n < 16; ++n)
    EXPECT_EQ(formats::e2m1_to_float(static_cast<uint8_t>(n)),
              weights::fp4_e2m1_to_f32(static_cast<uint8_t>(n)));
}

TEST(OpenDevice, RefusalsNameTheDeviceAndWhatWasFound) {
  try {
    (void)open_device({"tpu", 0, "native"});
    FAIL() << "an unknown device type was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("\"tpu\""), std::string::npos) << e.what();
  }
  try {
    (void)open_device({"cuda", 0, "/nonexistent/libtessera_cuda.so"});
    FAIL() << "a missing module was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libtessera_cuda.so"), std::string::npos)
        << e.what();
  }
  try {
    (void)open_device({"cuda", 3, "emulated"});
    FAIL() << "an ordinal beyond the emulated device was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:3 does not exist"), std::string::npos) << e.what();
  }
}

TEST(OpenDevice, CpuAndEmulatedDescribeThemselves) {
  EXPECT_EQ(open_device({})->describe(), "cpu");
  const std::string emulated = open_device({"cuda", 0, "emulated"})->describe();
  EXPECT_NE(emulated.find("cuda:0 Tessera SIMT emulator (sm_90"), std::string::npos) << emulated;
  EXPECT_NE(emulated.find("emulated"), std::string::npos) << emulated;
}

// On the device check's GPU machine the GPU backend must be among the backends above.
TEST(GpuBackend, OpensWhereRequiredForBackendOps) { expect_gpu_backend_where_required(); }

}  // namespace
}  // namespace tessera::device
