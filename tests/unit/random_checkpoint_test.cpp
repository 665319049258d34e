// Checkpoints made on demand: the fp32 -> FP8 / FP4 / BF16 encoders against a brute-force nearest
// code, the streaming safetensors writer's bookkeeping, and a DeepSeek-V4-Flash-shaped checkpoint
// (real widths; 2 layers, 8 experts, a 1024-row vocabulary) that the loader accepts in the
// official formats and that decodes to finite, non-flat logits.
#include "model/random_checkpoint.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "model/checkpoint_presets.hpp"
#include "ops/compute_threads.hpp"
#include "runtime/runtime.hpp"
#include "util/check.hpp"
#include "weights/dsv4_config.hpp"
#include "weights/numeric_encoding.hpp"
#include "weights/numeric_formats.hpp"
#include "weights/safetensors.hpp"
#include "weights/safetensors_writer.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using weights::DType;

// The code whose value is nearest to x; ties to the even code. codes: candidates, ascending value.
template <typename Decode>
int brute_force_nearest(float x, int first_code, int last_code, Decode decode) {
  int best = first_code;
  for (int c = first_code; c <= last_code; ++c) {
    const float d = std::fabs(decode(c) - x), best_d = std::fabs(decode(best) - x);
    if (d < best_d || (d == best_d && c % 2 == 0 && best % 2 != 0)) best = c;
  }
  return best;
}

std::vector<float> probe_values(float max) {  // codes, midpoints, and a spread in between
  std::vector<float> v;
  for (int i = 0; i <= 4000; ++i) v.push_back(max * static_cast<float>(i) / 4000.0f);
  return v;
}

TEST(NumericEncoding, E4M3IsTheNearestCodeTiesToEven) {
  auto decode = [](int c) { return weights::fp8_e4m3_to_f32(static_cast<uint8_t>(c)); };
  std::vector<float> xs = probe_values(448.0f);
  for (int c = 0; c < 0x7E; ++c) {
    xs.push_back(decode(c));
    xs.push_back((decode(c) + decode(c + 1)) / 2);  // exact ties
  }
  for (const float x : xs) {
    const int want = brute_force_nearest(x, 0, 0x7E, decode);
    ASSERT_EQ(weights::f32_to_e4m3(x), want) << x;
    ASSERT_EQ(weights::f32_to_e4m3(-x), want | 0x80) << -x;
  }
  EXPECT_EQ(weights::f32_to_e4m3(1e6f), 0x7E);  // saturates at 448, never NaN
}

TEST(NumericEncoding, E2M1IsTheNearestCodeTiesToEven) {
  auto decode = [](int c) { return weights::fp4_e2m1_to_f32(static_cast<uint8_t>(c)); };
  std::vector<float> xs = probe_values(6.0f);
  for (float tie : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}) xs.push_back(tie);
  for (const float x : xs) {
    const int want = brute_force_nearest(x, 0, 7, decode);
    ASSERT_EQ(weights::f32_to_e2m1(x), want) << x;
    ASSERT_EQ(weights::f32_to_e2m1(-x), want | 0x8) << -x;
  }
}

TEST(NumericEncoding, Ue8m0ScaleIsTheSmallestPowerOfTwoThatFits) {
  EXPECT_EQ(weights::ue8m0_scale_for(448.0f, 448.0f), 127);  // exactly 1.0
  EXPECT_EQ(weights::ue8m0_scale_for(449.0f, 448.0f), 128);
  EXPECT_EQ(weights::ue8m0_scale_for(3.0f, 6.0f), 126);  // 0.5
  EXPECT_EQ(weights::ue8m0_scale_for(0.0f, 6.0f), 127);
  for (const float amax : {1e-3f, 0.07f, 1.0f, 37.5f, 1000.0f}) {
    const float scale = weights::ue8m0_to_f32(weights::ue8m0_scale_for(amax, 448.0f));
    EXPECT_LE(amax / scale, 448.0f);
    EXPECT_GT(amax / scale, 224.0f);
  }
  EXPECT_EQ(weights::f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(weights::f32_to_bf16(1.0f + 1.0f / 256), 0x3F80);  // tie to even
}

TEST(SafetensorsWriter, ChecksEveryDeclaredByteAndReadsBack) {
  const fs::path path = fs::temp_directory_path() / ("writer_" + std::to_string(getpid()));
  {
    weights::SafetensorsWriter w(path, {{"a", DType::F32, {2}}, {"b", DType::I8, {3}}});
    const float a[2] = {1.5f, -2.0f};
    EXPECT_EQ(w.append({reinterpret_cast<const uint8_t*>(a), 8}), 0u);
    EXPECT_THROW(w.close(), Error);                             // b not written
    EXPECT_THROW(w.append(std::vector<uint8_t>(4, 0)), Error);  // b is 3 bytes
    EXPECT_EQ(w.append(std::vector<uint8_t>{1, 2, 3}), 1u);
    EXPECT_THROW(w.append(std::vector<uint8_t>{4}), Error);  // past the end
    w.close();
  }
  const auto file = weights::SafetensorsFile::open(path);
  ASSERT_EQ(file.tensors().size(), 2u);
  const auto* b = file.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(static_cast<int>(file.data(*b)[2]), 3);
  fs::remove(path);
}

TEST(CheckpointPresets, FlashWidthsAndReducedSchedules) {
  const auto flash = dsv4::preset_model_config("flash");
  EXPECT_EQ(flash.num_layers, 43);
  EXPECT_EQ(flash.compress_ratios.size(), 43u);
  EXPECT_EQ(flash.compress_ratios[1], 0);
  EXPECT_EQ(flash.compress_ratios[2], 4);
  EXPECT_EQ(flash.compress_ratios[41], 128);
  EXPECT_EQ(flash.compress_ratios[42], 4);
  const auto pro = dsv4::preset_model_config("pro");
  EXPECT_EQ(pro.compress_ratios[0], 128);
  EXPECT_EQ(pro.compress_ratios[60], 4);
  const auto small = dsv4::preset_model_config("flash", {3, 8, 1024});
  EXPECT_EQ(small.compress_ratios, (std::vector<int64_t>{0, 4, 128}));
  EXPECT_EQ(small.num_hash_layers, 2);
  EXPECT_EQ(small.experts_per_token, 6);
  // config.json round trip through the parser the loader uses.
  const auto parsed = dsv4::parse_model_config(dsv4::official_config_json(small), "test");
  EXPECT_EQ(parsed.compress_ratios, small.compress_ratios);
  EXPECT_EQ(parsed.hidden_size, 4096);
  EXPECT_EQ(parsed.index_topk, 512);
  EXPECT_THROW((void)dsv4::preset_model_config("flashy"), Error);
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(RandomCheckpoint, TheFileDoesNotDependOnTheThreadCount) {
  auto config = dsv4::preset_model_config("flash", {3, 4, 64});
  config.hidden_size = 256;  // small widths, every storage format
  config.num_heads = 4;
  config.q_lora_rank = 256;
  config.o_groups = 2;
  config.o_lora_rank = 128;
  config.index_n_heads = 4;
  config.moe_intermediate_size = 128;
  const fs::path base = fs::temp_directory_path() / ("threads_ckpt_" + std::to_string(getpid()));
  const int before = ops::compute_threads();
  ops::set_compute_threads(1);
  (void)dsv4::write_random_checkpoint(config, base / "one", 5);
  ops::set_compute_threads(2);
  (void)dsv4::write_random_checkpoint(config, base / "two", 5);
  (void)dsv4::write_random_checkpoint(config, base / "seed6", 6);
  ops::set_compute_threads(before);
  const std::string one = file_bytes(base / "one" / "model.safetensors");
  EXPECT_GT(one.size(), 1000u);
  EXPECT_TRUE(one == file_bytes(base / "two" / "model.safetensors"));
  EXPECT_FALSE(one == file_bytes(base / "seed6" / "model.safetensors"));
  fs::remove_all(base);
}

TEST(RandomCheckpoint, FlashShapedCheckpointLoadsInOfficialFormatsAndDecodes) {
  const fs::path dir = fs::temp_directory_path() / ("flash_ckpt_" + std::to_string(getpid()));
  const auto config = dsv4::preset_model_config("flash", {2, 8, 1024});
  (void)dsv4::write_random_checkpoint(config, dir, 7);

  {  // the official names and storage formats (DSV4.md §3)
    const auto file = weights::SafetensorsFile::open(dir / "model.safetensors");
    const auto* wq_b = file.find("layers.1.attn.wq_b.weight");
    ASSERT_NE(wq_b, nullptr);
    EXPECT_EQ(wq_b->dtype, DType::F8_E4M3);
    EXPECT_EQ(wq_b->shape, (std::vector<int64_t>{32768, 1024}));
    const auto* wq_b_scale = file.find("layers.1.attn.wq_b.scale");
    ASSERT_NE(wq_b_scale, nullptr);
    EXPECT_EQ(wq_b_scale->dtype, DType::F8_E8M0);
    EXPECT_EQ(wq_b_scale->shape, (std::vector<int64_t>{256, 8}));
    const auto* w2 = file.find("layers.0.ffn.experts.7.w2.weight");
    ASSERT_NE(w2, nullptr);
    EXPECT_EQ(w2->dtype, DType::I8);
    EXPECT_EQ(w2->shape, (std::vector<int64_t>{4096, 1024}));
    EXPECT_EQ(file.find("layers.0.ffn.experts.7.w2.scale")->shape,
              (std::vector<int64_t>{4096, 64}));
    EXPECT_EQ(file.find("layers.0.ffn.gate.tid2eid")->dtype, DType::I64);
    EXPECT_EQ(file.find("layers.1.attn.indexer.wq_b.weight")->shape,
              (std::vector<int64_t>{8192, 1024}));
    EXPECT_EQ(file.find("head.weight")->dtype, DType::BF16);
  }

  RuntimeOptions o;
  o.model_dir = dir;
  o.plugin_dirs = {TESSERA_PLUGIN_DIR};
  o.memory_gib = 0.5;
  o.max_context = 256;
  Runtime rt(o);
  EXPECT_EQ(rt.model_config().hidden_size, 4096);
  auto seq = rt.new_sequence();
  std::vector<int32_t> tokens = {0, 17, 400, 999};
  dsv4::ForwardBatch prefill;
  prefill.chunks.push_back({seq.get(), tokens, false});
  dsv4::Logits logits = rt.model().forward(prefill);
  for (int step = 0; step < 3; ++step) {
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    int32_t best = 0;
    for (int64_t v = 0; v < logits.vocab; ++v) {
      const float x = logits.row(0)[v];
      ASSERT_TRUE(std::isfinite(x)) << "step " << step << " vocab " << v;
      if (x > hi) best = static_cast<int32_t>(v);
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    EXPECT_GT(hi - lo, 1.0f) << "flat logits at step " << step;
    dsv4::ForwardBatch next;
    next.chunks.push_back({seq.get(), std::span<const int32_t>(&best, 1), false});
    logits = rt.model().forward(next);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera
