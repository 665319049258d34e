// Linear weights kept in bf16 (model/bf16_weights.hpp): which tensors move, that the values are
// kept exactly, that a tensor with one value that is not a bfloat16 stays fp32, and that the
// shipped BF16 model gives bit-identical logits from bf16 and fp32 weights, alone and sharded
// over two tensor-parallel ranks (the shards are sliced from the bf16 storage).
#include "model/bf16_weights.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "engine_harness.hpp"
#include "executor/executor.hpp"
#include "ops/gemm_nt.hpp"
#include "ops/linear.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {
namespace {

const std::filesystem::path kShipped =
    std::filesystem::path(TESSERA_SOURCE_DIR) / "models/tiny-dsv4";

float widened(uint16_t b) { return std::bit_cast<float>(uint32_t{b} << 16); }

// Every value of `kept` (in bf16) equals the fp32 original.
void expect_same_values(const Tensor& original, const Tensor& kept, const char* what) {
  ASSERT_TRUE(kept.in_bf16()) << what;
  ASSERT_EQ(kept.bf16.size(), original.data.size()) << what;
  EXPECT_EQ(kept.shape, original.shape) << what;
  for (size_t i = 0; i < original.data.size(); ++i) {
    ASSERT_EQ(widened(kept.bf16[i]), original.data[i]) << what << " value " << i;
  }
}

TEST(Bf16Weights, ShippedModelKeepsEveryLinearWeightInBf16AndOthersInFp32) {
  const ModelConfig config = load_model_config(kShipped);
  const ModelWeights original = load_model_weights(kShipped, config);
  ModelWeights kept = original;
  const Bf16Summary s = keep_linear_weights_in_bf16(kept);
  // The checkpoint stores the mHC mixes (2 per layer and the head's) in F32, with values that are
  // not bfloat16s: they stay fp32; every other linear weight is BF16 there.
  const int64_t f32_mixes = 2 * config.num_layers + 1;
  EXPECT_EQ(s.kept_fp32, f32_mixes);
  EXPECT_FALSE(kept.hc_head_fn.in_bf16());
  EXPECT_FALSE(kept.layers[4].hc_ffn.fn.in_bf16());
  // Per layer: 2 mHC mixes, 5 attention projections, router, 3 x (shared + routed) expert
  // matrices; compressors (2 each) and indexers (2 + a compressor) where the layer has them.
  int64_t expected = 2;  // head, hc_head_fn
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const int64_t m = config.compress_ratio(l);
    expected += 2 + 5 + 1 + 3 * (1 + config.n_routed_experts) + (m > 0 ? 2 : 0) + (m == 4 ? 4 : 0);
  }
  EXPECT_EQ(s.tensors, expected - f32_mixes);
  expect_same_values(original.head, kept.head, "head");
  expect_same_values(original.layers[2].ffn.experts[5].w2, kept.layers[2].ffn.experts[5].w2,
                     "layer 2 expert 5 w2");
  expect_same_values(original.layers[1].attn.indexer->compressor.wgate,
                     kept.layers[1].attn.indexer->compressor.wgate, "layer 1 indexer wgate");
  int64_t saved = 0;
  for_each_linear_weight(kept, [&](const Tensor& t) { saved += t.in_bf16() ? t.numel() * 2 : 0; });
  EXPECT_EQ(s.bytes_saved, saved);
  // Not linear weights: untouched fp32.
  EXPECT_EQ(kept.embed.data, original.embed.data);
  EXPECT_FALSE(kept.embed.in_bf16());
  EXPECT_EQ(kept.layers[0].attn_norm.data, original.layers[0].attn_norm.data);
  EXPECT_EQ(kept.layers[1].attn.compressor->ape.data, original.layers[1].attn.compressor->ape.data);
}

TEST(Bf16Weights, ATensorWithOneValueThatIsNotABfloat16StaysFp32) {
  const ModelConfig config = load_model_config(kShipped);
  ModelWeights w = load_model_weights(kShipped, config);
  Tensor& wkv = w.layers[3].attn.wkv;
  const float before = wkv.data[17];
  wkv.data[17] = std::nextafter(before, 1e30f);  // one ulp: no longer a bfloat16
  ASSERT_FALSE(is_bf16_exact(wkv.data[17]));
  const Bf16Summary s = keep_linear_weights_in_bf16(w);
  EXPECT_EQ(s.kept_fp32, 2 * config.num_layers + 1 + 1);  // the F32 mHC mixes and wkv
  EXPECT_FALSE(wkv.in_bf16());
  EXPECT_EQ(wkv.data[17], std::nextafter(before, 1e30f));
  EXPECT_TRUE(w.layers[3].attn.wq_a.in_bf16());
}

TEST(Bf16Weights, RandomWeightsRoundToTheNearestBfloat16TiesToEven) {
  const float u = std::ldexp(1.0f, -7);  // one bfloat16 ulp at 1
  ModelWeights w;
  w.head = {{1, 6},
            {1.0f + u / 2, 1.0f + 1.5f * u, 1.0f + u / 2 + std::ldexp(1.0f, -20), -(1.0f + u / 2),
             1.0f + u, 3.0e-3f},
            {}};
  w.embed = {{1, 1}, {1.0f + u / 2}, {}};  // not a linear weight: untouched
  round_linear_weights_to_bf16(w);
  EXPECT_EQ(w.head.data[0], 1.0f);          // tie: to the even mantissa
  EXPECT_EQ(w.head.data[1], 1.0f + 2 * u);  // tie: to the even mantissa, upwards
  EXPECT_EQ(w.head.data[2], 1.0f + u);      // above the tie: up
  EXPECT_EQ(w.head.data[3], -1.0f);         // sign kept
  EXPECT_EQ(w.head.data[4], 1.0f + u);      // already a bfloat16
  EXPECT_TRUE(is_bf16_exact(w.head.data[5]));
  EXPECT_NEAR(w.head.data[5], 3.0e-3f, 3.0e-3f * u);
  EXPECT_EQ(w.embed.data[0], 1.0f + u / 2);
  EXPECT_EQ(keep_linear_weights_in_bf16(w).tensors, 1);
}

// One prefill step of three prompts and `steps - 1` decode steps through an executor of `tp`
// ranks; `bf16_activations`: model.dtype = "bf16".
std::vector<float> logits_of(bool bf16, int tp, bool bf16_activations = false, int steps = 6) {
  RuntimeOptions o = engine_test::runtime_options(0.05);
  o.model_dir = kShipped;
  o.linear_weights_in_bf16 = bf16;
  o.bf16_activations = bf16_activations;
  Runtime rt(o);
  const dsv4::Tensor& head = rt.weights()->head;  // bf16 rows, or panels (weight_panels.hpp)
  EXPECT_EQ(head.in_bf16() || head.in_bf16_panels(), bf16 && ops::gemm_reads_bf16_weights());
  Executor ex(rt, tp);
  std::vector<std::vector<int32_t>> inputs{engine_test::make_prompt(1, 40, 4096),
                                           engine_test::make_prompt(2, 9, 4096),
                                           engine_test::make_prompt(3, 130, 4096)};
  for (uint64_t s = 0; s < inputs.size(); ++s) {
    ex.apply({CacheOpKind::kCreate, s + 1, 0});
  }
  std::vector<float> all;
  for (int step = 0; step < steps; ++step) {
    std::vector<PlannedChunk> chunks;
    for (size_t s = 0; s < inputs.size(); ++s) {
      PlannedChunk c;
      c.sequence = s + 1;
      c.tokens = inputs[s];
      chunks.push_back(std::move(c));
    }
    const Logits logits = ex.step(chunks);
    all.insert(all.end(), logits.values.begin(), logits.values.end());
    for (size_t s = 0; s < inputs.size(); ++s) {
      const float* row = logits.row(logits.chunk_rows[s]);
      inputs[s] = {static_cast<int32_t>(std::max_element(row, row + logits.vocab) - row)};
    }
  }
  return all;
}

void expect_bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  size_t differing = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    differing += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  }
  EXPECT_EQ(differing, 0u) << "of " << a.size() << " logits";
}

TEST(Bf16Weights, ShippedModelGivesTheSameLogitsFromBf16AndFp32Weights) {
  expect_bit_identical(logits_of(true, 1), logits_of(false, 1));
}

TEST(Bf16Weights, TensorParallelShardsOfBf16WeightsGiveTheSameLogits) {
  expect_bit_identical(logits_of(true, 2), logits_of(false, 2));
}

double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

// model.dtype = "bf16" (x rounded to bf16 for every weight held in bf16): the prompts' logits
// stay close to the fp32 path's and are not them (the rounding ran), on every rank: at TP 2 they
// differ from TP 1's less than from fp32 (the sums' order flips a few bf16 roundings, and the
// flips grow through the layers: 4.9e-4 vs 8.1e-4 since the reference attention computes in fp32,
// 2.6e-4 vs 8.6e-4 with its earlier double precision; with rank 1 in fp32, 9.3e-4 and 1.0e-3).
// The greedy tokens agree on this model.
TEST(Bf16Weights, Bf16ActivationsStayCloseToTheFp32Logits) {
  if (!ops::gemm_nt_bf16_available()) {
    GTEST_SKIP() << "no AVX512_BF16: model.dtype = bf16 refused";
  }
  const std::vector<float> fp32 = logits_of(true, 1, false, 1);
  const std::vector<float> bf16 = logits_of(true, 1, true, 1);
  const std::vector<float> bf16_tp2 = logits_of(true, 2, true, 1);
  ASSERT_EQ(fp32.size(), bf16.size());
  const double error = relative_l2(bf16, fp32), tp_error = relative_l2(bf16_tp2, bf16);
  std::printf("relative L2: bf16 vs fp32 %.3g, bf16 TP 2 vs TP 1 %.3g\n", error, tp_error);
  EXPECT_GT(error, 1e-4) << "bf16 activations gave the fp32 logits: the rounding did not run";
  EXPECT_LT(error, 2e-2);
  EXPECT_LT(tp_error, 0.8 * error) << "a rank computed in fp32";
  const auto vocab = static_cast<int64_t>(fp32.size() / 3);
  for (int64_t r = 0; r < 3; ++r) {
    const auto argmax = [&](const std::vector<float>& v) {
      return std::max_element(v.begin() + r * vocab, v.begin() + (r + 1) * vocab) - v.begin();
    };
    EXPECT_EQ(argmax(bf16), argmax(fp32)) << "prompt " << r;
  }
}

}  // namespace
}  // namespace tessera::dsv4
