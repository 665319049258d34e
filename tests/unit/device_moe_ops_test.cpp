// The MoE's device ops without a host round trip, on every backend against the cpu backend:
//   moe_group       the routed rows grouped by expert (ops/moe_grouping.hpp): exact, on Flash's
//                   256 experts x top 6 and a small case, with a failed pick (outside [0, E))
//                   that joins no expert; the cpu's grouping checked against its definition
//                   (every row's token, experts ascending per token, tokens in order per expert);
//   grouped_linear  every expert over its rows in one launch, each format (bf16, f32, fp8,
//                   fp4), experts without rows among them: the tolerance of the single-weight
//                   product (device_ops_test.cpp), and the cpu's grouped product equal to its
//                   per-expert products.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "device_backends.hpp"

namespace tessera::device {
namespace {

class MoeOps : public ::testing::TestWithParam<size_t> {
 protected:
  Device& dev() { return *backends().at(GetParam()).device; }
};

struct Picks {
  std::vector<int32_t> picked;
  std::vector<float> weight;
};

// K distinct experts per token; `bad_token` (when >= 0) gets one pick outside [0, E).
Picks random_picks(int64_t T, int64_t K, int64_t E, uint32_t seed, int64_t bad_token = -1) {
  std::mt19937 rng(seed);
  Picks p;
  std::vector<int32_t> all(static_cast<size_t>(E));
  std::iota(all.begin(), all.end(), 0);
  for (int64_t t = 0; t < T; ++t) {
    std::shuffle(all.begin(), all.end(), rng);
    p.picked.insert(p.picked.end(), all.begin(), all.begin() + K);
  }
  if (bad_token >= 0)
    p.picked[static_cast<size_t>(bad_token * K + 1)] = static_cast<int32_t>(E + 3);
  p.weight = random_floats(p.picked.size(), seed + 1);
  return p;
}

void check_group(Device& dev, int64_t T, int64_t K, int64_t E, uint32_t seed, int64_t bad) {
  const Stream s = dev.create_stream();
  const Picks p = random_picks(T, K, E, seed, bad);
  const size_t n = p.picked.size();
  std::vector<int64_t> offsets(static_cast<size_t>(E + 1)), source(n), src(n);
  std::vector<float> weight(n);
  cpu().ops().moe_group(cpu().create_stream(), p.picked.data(), p.weight.data(), T, K, E,
                        offsets.data(), source.data(), src.data(), weight.data());
  // The definition: every valid pick has a row; token t's rows in ascending expert order.
  EXPECT_EQ(offsets[E], static_cast<int64_t>(n) - (bad >= 0 ? 1 : 0));
  for (int64_t t = 0; t < T; ++t) {
    std::vector<int32_t> experts;
    for (int64_t k = 0; k < K; ++k)
      if (p.picked[t * K + k] >= 0 && p.picked[t * K + k] < E)
        experts.push_back(p.picked[t * K + k]);
    std::sort(experts.begin(), experts.end());
    for (size_t c = 0; c < experts.size(); ++c) {
      const int64_t row = src[t * K + c];
      ASSERT_EQ(source[row], t) << "token " << t << " pick " << c;
      ASSERT_GE(row, offsets[experts[c]]);
      ASSERT_LT(row, offsets[experts[c] + 1]);
      const auto k =
          std::find(p.picked.begin() + t * K, p.picked.begin() + (t + 1) * K, experts[c]) -
          (p.picked.begin() + t * K);
      ASSERT_EQ(weight[t * K + c], p.weight[t * K + k]);
    }
  }
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = offsets[e] + 1; r < offsets[e + 1]; ++r)
      ASSERT_LT(source[r - 1], source[r]) << "expert " << e << ": tokens out of order";
  // The device's grouping equals the cpu's, entry for entry.
  DeviceBuffer dp = upload(dev, s, p.picked), dw = upload(dev, s, p.weight),
               doff = dev.allocate(offsets.size() * 8), dsource = dev.allocate(n * 8),
               dsrc = dev.allocate(n * 8), dcw = dev.allocate(n * 4);
  dev.ops().moe_group(s, dp.as<int32_t>(), dw.as<float>(), T, K, E, doff.as<int64_t>(),
                      dsource.as<int64_t>(), dsrc.as<int64_t>(), dcw.as<float>());
  EXPECT_EQ(download<int64_t>(dev, s, doff, offsets.size()), offsets);
  EXPECT_EQ(download<int64_t>(dev, s, dsource, n), source);
  EXPECT_EQ(download<int64_t>(dev, s, dsrc, n), src);
  EXPECT_EQ(download<float>(dev, s, dcw, n), weight);
}

TEST_P(MoeOps, GroupByExpert) {
  check_group(dev(), 7, 6, 256, 10, -1);  // Flash: 256 experts, top 6
  check_group(dev(), 40, 2, 8, 11, -1);   // many tokens per expert
  check_group(dev(), 9, 6, 64, 12, 4);    // token 4 picked an expert outside [0, E)
}

// Expert e's weights [out, in] of `format` (a fresh random tensor each) and its scales.
struct Experts {
  std::vector<std::vector<uint8_t>> weights, scales;
};

Experts random_experts(LinearFormat format, int64_t E, int64_t in, int64_t out, uint32_t seed) {
  Experts x;
  for (int64_t e = 0; e < E; ++e) {
    const uint32_t s = seed + 10 * static_cast<uint32_t>(e);
    std::vector<uint8_t> bytes, scales;
    if (format == LinearFormat::kBf16) {
      const auto w = random_bf16(static_cast<size_t>(out * in), s, 0.1f);
      bytes.resize(w.size() * 2);
      std::memcpy(bytes.data(), w.data(), bytes.size());
    } else if (format == LinearFormat::kF32) {
      const auto w = random_floats(static_cast<size_t>(out * in), s, 0.1f);
      bytes.resize(w.size() * 4);
      std::memcpy(bytes.data(), w.data(), bytes.size());
    } else if (format == LinearFormat::kFp8) {
      bytes = random_e4m3(static_cast<size_t>(out * in), s, 4.0f / std::sqrt(float(in)));
      scales = random_scales(static_cast<size_t>((out + 127) / 128 * ((in + 127) / 128)), s + 1);
    } else {
      std::mt19937 rng(s);
      bytes.resize(static_cast<size_t>(out * in / 2));
      for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
      scales = random_scales(static_cast<size_t>(out * in / 32), s + 1);
    }
    x.weights.push_back(std::move(bytes));
    x.scales.push_back(std::move(scales));
  }
  return x;
}

void check_grouped(Device& dev, LinearFormat format, int64_t in, int64_t out,
                   const std::vector<int64_t>& rows_per_expert, uint32_t seed) {
  const Stream s = dev.create_stream();
  const auto E = static_cast<int64_t>(rows_per_expert.size());
  std::vector<int64_t> offsets(static_cast<size_t>(E + 1), 0);
  for (int64_t e = 0; e < E; ++e) offsets[e + 1] = offsets[e] + rows_per_expert[e];
  const int64_t rows = offsets[E];
  const std::vector<float> x = random_floats(static_cast<size_t>(rows * in), seed, 2.0f);
  const Experts w = random_experts(format, E, in, out, seed + 1);
  // The cpu: grouped, and one product per expert.
  std::vector<const void*> host_w, host_s;
  for (int64_t e = 0; e < E; ++e) {
    host_w.push_back(w.weights[e].data());
    host_s.push_back(w.scales[e].empty() ? nullptr : w.scales[e].data());
  }
  std::vector<float> want(static_cast<size_t>(rows * out), -1.0f), single(want.size(), -1.0f);
  const Stream cs = cpu().create_stream();
  cpu().ops().grouped_linear(cs, format, x.data(), in, host_w.data(),
                             reinterpret_cast<const uint8_t* const*>(host_s.data()), E,
                             offsets.data(), out, want.data());
  std::vector<double> magnitude(want.size(), 0.0);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t r0 = offsets[e], n = rows_per_expert[e];
    if (n == 0) continue;
    const float* xe = x.data() + r0 * in;
    float* ye = single.data() + r0 * out;
    const auto* bytes = w.weights[e].data();
    switch (format) {
      case LinearFormat::kBf16:
        cpu().ops().linear_bf16(cs, xe, n, in, reinterpret_cast<const uint16_t*>(bytes), out, ye);
        break;
      case LinearFormat::kF32:
        cpu().ops().linear_f32(cs, xe, n, in, reinterpret_cast<const float*>(bytes), out, ye);
        break;
      case LinearFormat::kFp8:
        cpu().ops().linear_fp8(cs, xe, n, in, bytes, w.scales[e].data(), out, ye);
        break;
      case LinearFormat::kFp4:
        cpu().ops().linear_fp4(cs, xe, n, in, bytes, w.scales[e].data(), out, ye);
        break;
    }
    for (int64_t r = r0; r < r0 + n; ++r)
      for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i)  // a bound on the products' sizes: |x| * 8 (any format)
          magnitude[r * out + o] += std::fabs(double(x[r * in + i])) * 8.0 / std::sqrt(double(in));
  }
  EXPECT_EQ(want, single) << "the cpu's grouped product differs from its per-expert products";
  // The device, one launch.
  std::vector<DeviceBuffer> dw, ds;
  std::vector<const void*> dev_w, dev_s;
  for (int64_t e = 0; e < E; ++e) {
    dw.push_back(upload(dev, s, w.weights[e]));
    dev_w.push_back(dw.back().data());
    if (w.scales[e].empty()) {
      dev_s.push_back(nullptr);
    } else {
      ds.push_back(upload(dev, s, w.scales[e]));
      dev_s.push_back(ds.back().data());
    }
  }
  DeviceBuffer dtw = upload(dev, s, dev_w), dts = upload(dev, s, dev_s), dx = upload(dev, s, x),
               doff = upload(dev, s, offsets),
               dy = upload(dev, s, std::vector<float>(want.size(), -1.0f));
  dev.ops().grouped_linear(
      s, format, dx.as<float>(), in, static_cast<const void* const*>(dtw.data()),
      static_cast<const uint8_t* const*>(dts.data()), E, doff.as<int64_t>(), out, dy.as<float>());
  expect_close("grouped_linear format " + std::to_string(static_cast<int>(format)) + " " +
                   std::to_string(rows) + "x" + std::to_string(in) + " -> " + std::to_string(out),
               download<float>(dev, s, dy, want.size()), want,
               [&](size_t i) { return 2.5e-5 * magnitude[i] + 1e-5; });
}

TEST_P(MoeOps, GroupedLinearEveryFormat) {
  const std::vector<int64_t> rows = {3, 0, 1, 0, 5};  // experts without rows among them
  for (const LinearFormat f :
       {LinearFormat::kBf16, LinearFormat::kF32, LinearFormat::kFp8, LinearFormat::kFp4}) {
    check_grouped(dev(), f, 256, 72, rows, 20 + static_cast<uint32_t>(f));
  }
  check_grouped(dev(), LinearFormat::kFp4, 4096, 64, {1, 0, 2}, 30);  // Flash expert w1 width
  // Experts with 16 rows or more go to the tensor-core kernels (linear_bf16_mma.cu,
  // linear_quantised_mma.cu), the others to the decode-shaped ones, in the same call; 70 rows:
  // two row tiles. fp32 weights stay decode-shaped at any row count.
  for (const LinearFormat f :
       {LinearFormat::kBf16, LinearFormat::kF32, LinearFormat::kFp8, LinearFormat::kFp4})
    check_grouped(dev(), f, 256, 136, {16, 2, 0, 70, 15}, 40 + static_cast<uint32_t>(f));
}

INSTANTIATE_TEST_SUITE_P(Backends, MoeOps, ::testing::Range<size_t>(0, backends().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return backends().at(info.param).name;
                         });

// On the device check's GPU machine the GPU backend must be among the backends above.
TEST(GpuBackend, OpensWhereRequiredForMoeOps) { expect_gpu_backend_where_required(); }

}  // namespace
}  // namespace tessera::device
