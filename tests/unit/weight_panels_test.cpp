// Linear weights packed into panels (model/weight_panels.hpp): every fp32 and bf16 linear weight
// of the shipped model is packed with every value, bf16 rows stay where bf16 activations need
// them, nothing else is touched; and a runtime refuses bf16 activations over bf16 panels.
#include "model/weight_panels.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine_harness.hpp"
#include "model/bf16_weights.hpp"
#include "ops/gemm_nt.hpp"
#include "ops/linear.hpp"  // gemm_reads_panels
#include "runtime/runtime.hpp"
#include "util/check.hpp"

namespace tessera::dsv4 {
namespace {

const std::filesystem::path kShipped =
    std::filesystem::path(TESSERA_SOURCE_DIR) / "models/tiny-dsv4";

std::vector<Tensor*> linear_weights(ModelWeights& w) {
  std::vector<Tensor*> out;
  for_each_linear_weight(w, [&](Tensor& t) { out.push_back(&t); });
  return out;
}

// Row n of a packed weight, unpacked.
template <typename T>
std::vector<T> row_of(const std::vector<T, ArenaAllocator<T>>& panels, int64_t in, int64_t n) {
  std::vector<T> row(static_cast<size_t>(in));
  ops::unpack_weight_panels(panels.data(), in * ops::kWeightPanelWidth, n, 1, in, row.data(), in);
  return row;
}

TEST(WeightPanels, EveryLinearWeightIsPackedWithEveryValue) {
  if (!ops::gemm_reads_panels()) {
    GTEST_SKIP() << "neither AVX-512 nor AVX2: our kernels do not run, so nothing is packed";
  }
  const ModelConfig config = load_model_config(kShipped);
  ModelWeights w = load_model_weights(kShipped, config);
  keep_linear_weights_in_bf16(w);  // bf16 and fp32 (the mHC mixes) linear weights both
  const ModelWeights original = w;
  const int64_t packed = pack_linear_weights_into_panels(w, false);
  const auto now = linear_weights(w);
  ModelWeights copy = original;
  const auto before = linear_weights(copy);
  EXPECT_EQ(packed, static_cast<int64_t>(now.size()));
  size_t fp32 = 0, bf16 = 0;
  for (size_t i = 0; i < now.size(); ++i) {
    const Tensor& p = *now[i];
    const Tensor& b = *before[i];
    ASSERT_EQ(p.shape, b.shape);
    EXPECT_EQ(p.numel(), b.numel()) << "weight " << i;
    const int64_t out = b.shape[0], in = b.shape[1];
    EXPECT_TRUE(p.data.empty() && p.bf16.empty()) << "weight " << i << " kept its rows";
    for (const int64_t n : {int64_t{0}, out / 2, out - 1}) {
      if (b.in_bf16()) {
        ASSERT_TRUE(p.in_bf16_panels()) << "weight " << i;
        EXPECT_EQ(row_of(p.bf16_panels, in, n),
                  std::vector<uint16_t>(b.bf16.begin() + n * in, b.bf16.begin() + (n + 1) * in))
            << "weight " << i << " row " << n;
      } else {
        ASSERT_TRUE(p.in_panels()) << "weight " << i;
        EXPECT_EQ(row_of(p.panels, in, n),
                  std::vector<float>(b.data.begin() + n * in, b.data.begin() + (n + 1) * in))
            << "weight " << i << " row " << n;
      }
    }
    fp32 += b.in_bf16() ? 0 : 1;
    bf16 += b.in_bf16() ? 1 : 0;
  }
  EXPECT_GT(fp32, 0u);
  EXPECT_GT(bf16, 0u);
  EXPECT_EQ(w.embed.data, original.embed.data);  // not a linear weight: untouched
  EXPECT_TRUE(w.embed.panels.empty());
}

TEST(WeightPanels, Bf16RowsStayForBf16Activations) {
  if (!ops::gemm_reads_panels()) {
    GTEST_SKIP() << "neither AVX-512 nor AVX2: our kernels do not run, so nothing is packed";
  }
  const ModelConfig config = load_model_config(kShipped);
  ModelWeights w = load_model_weights(kShipped, config);
  keep_linear_weights_in_bf16(w);
  pack_linear_weights_into_panels(w, true);
  size_t rows = 0;
  for (const Tensor* t : linear_weights(w)) {
    EXPECT_FALSE(t->in_bf16_panels());
    EXPECT_TRUE(t->in_bf16() || t->in_panels());
    rows += t->in_bf16() ? 1 : 0;
  }
  EXPECT_GT(rows, 0u);
  EXPECT_TRUE(w.head.in_bf16());
}

TEST(WeightPanels, RuntimeRefusesBf16ActivationsOverBf16Panels) {
  if (!ops::gemm_nt_avx512_available() || !ops::gemm_nt_bf16_available()) {
    GTEST_SKIP()
        << "no AVX512_BF16: model.dtype = bf16 is refused before the weights are looked at";
  }
  const ModelConfig config = load_model_config(kShipped);
  ModelWeights w = load_model_weights(kShipped, config);
  keep_linear_weights_in_bf16(w);
  pack_linear_weights_into_panels(w, false);
  RuntimeOptions o = engine_test::runtime_options(0.05);
  o.bf16_activations = true;
  try {
    Runtime rt(o, config, std::make_shared<const ModelWeights>(std::move(w)));
    FAIL() << "bf16 activations ran over bf16 panels";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("need bf16 weights as rows"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tessera::dsv4
