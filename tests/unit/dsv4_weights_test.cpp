// load_model_weights on the three parity fixtures (shapes from the config, values against
// independent decodes of the raw bytes), the transformers stacked-expert layout, number-format
// decoding against hand-made bytes, and refusals of checkpoints this test breaks on purpose.
#include "model/dsv4_weights.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "util/check.hpp"
#include "weights/numeric_formats.hpp"
#include "weights/safetensors.hpp"

namespace tessera::dsv4 {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using weights::SafetensorsFile;

const fs::path kParity = fs::path(TESSERA_SOURCE_DIR) / "tests/data/parity";

// ---------------------------------------------------------------- independent reference decoders
// Written from the format definitions (OCP FP8 / MX), not from the loader's lookup tables.
float ref_e4m3(uint8_t b) {
  const int e = (b >> 3) & 0xF, m = b & 0x7;
  if (e == 0xF && m == 0x7) return NAN;
  const float v = e == 0 ? std::ldexp(static_cast<float>(m), -9)
                         : std::ldexp(static_cast<float>(8 + m), e - 10);  // (1 + m/8) 2^(e-7)
  return (b & 0x80) != 0 ? -v : v;
}
float ref_e8m0(uint8_t b) { return b == 0xFF ? NAN : std::ldexp(1.0f, b - 127); }
float ref_e2m1(uint8_t n) {
  const int e = (n >> 1) & 0x3, m = n & 0x1;
  const float v = e == 0 ? 0.5f * m : std::ldexp(1.0f + 0.5f * m, e - 1);
  return (n & 0x8) != 0 ? -v : v;
}

TEST(NumberFormats, ScalarDecodesMatchHandMadeBytes) {
  EXPECT_EQ(weights::fp8_e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(weights::fp8_e4m3_to_f32(0xB8), -1.0f);
  EXPECT_EQ(weights::fp8_e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(weights::fp8_e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(weights::fp8_e4m3_to_f32(0x7F)));
  EXPECT_EQ(weights::ue8m0_to_f32(127), 1.0f);
  EXPECT_EQ(weights::ue8m0_to_f32(130), 8.0f);
  EXPECT_EQ(weights::ue8m0_to_f32(0), std::ldexp(1.0f, -127));
  EXPECT_TRUE(std::isnan(weights::ue8m0_to_f32(0xFF)));
  EXPECT_EQ(weights::fp4_e2m1_to_f32(0x7), 6.0f);
  EXPECT_EQ(weights::fp4_e2m1_to_f32(0xF), -6.0f);
  EXPECT_EQ(weights::fp4_e2m1_to_f32(0x1), 0.5f);
  EXPECT_EQ(weights::fp4_e2m1_to_f32(0x5), 3.0f);
  EXPECT_EQ(weights::bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(weights::bf16_to_f32(0xC040), -3.0f);
  EXPECT_EQ(weights::f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(weights::f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(weights::f16_to_f32(0x7C00)));
  for (int b = 0; b < 256; ++b) {
    const auto byte = static_cast<uint8_t>(b);
    if (!std::isnan(ref_e4m3(byte))) EXPECT_EQ(weights::fp8_e4m3_to_f32(byte), ref_e4m3(byte)) << b;
    if (!std::isnan(ref_e8m0(byte))) EXPECT_EQ(weights::ue8m0_to_f32(byte), ref_e8m0(byte)) << b;
    EXPECT_EQ(weights::fp4_e2m1_to_f32(byte & 0xF), ref_e2m1(byte & 0xF)) << b;
  }
}

TEST(NumberFormats, BlockAndGroupDequantizationIndexScalesCorrectly) {
  // FP8 [3, 5] with 2x2 blocks -> scale [2, 3]; weight byte 0x38 (1.0) everywhere, so each output
  // is its block's scale.
  const std::vector<std::byte> w(15, std::byte{0x38});
  const std::vector<float> s = {1, 2, 4, 8, 16, 32};
  std::vector<float> out(15);
  weights::dequantize_fp8_blocks(w, 3, 5, s, 2, 2, out);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c) EXPECT_EQ(out[r * 5 + c], s[(r / 2) * 3 + c / 2]) << r << "," << c;
  // FP4 one row of 64: byte 0x71 = (low 0x1 = 0.5 for the even column, high 0x7 = 6.0 for the
  // odd one); group 0 scale 0.5, group 1 scale 4.
  const std::vector<std::byte> packed(32, std::byte{0x71});
  std::vector<float> out4(64);
  weights::dequantize_fp4_groups(packed, 1, 64, std::vector<float>{0.5f, 4.0f}, 32, out4);
  for (int c = 0; c < 64; ++c)
    EXPECT_EQ(out4[c], (c % 2 == 0 ? 0.5f : 6.0f) * (c < 32 ? 0.5f : 4.0f)) << c;
}

// ---------------------------------------------------------------- raw checkpoint editing
struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

std::vector<RawTensor> read_raw(const fs::path& file) {
  const SafetensorsFile f = SafetensorsFile::open(file);
  std::vector<RawTensor> out;
  for (const auto& t : f.tensors()) {
    const auto data = f.data(t);
    out.push_back({t.name, std::string(weights::dtype_name(t.dtype)), t.shape,
                   std::string(reinterpret_cast<const char*>(data.data()), data.size())});
  }
  return out;
}

void write_raw(const fs::path& file, const std::vector<RawTensor>& tensors) {
  json header = json::object();
  std::string data;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  const std::string text = header.dump();
  std::string prefix(8, '\0');
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<char>((text.size() >> (8 * i)) & 0xFF);
  std::ofstream(file, std::ios::binary) << prefix << text << data;
}

RawTensor& find_raw(std::vector<RawTensor>& tensors, const std::string& name) {
  for (auto& t : tensors)
    if (t.name == name) return t;
  throw std::runtime_error("fixture has no tensor " + name);
}

class TempModel {
 public:
  explicit TempModel(const fs::path& config_from) {
    dir_ = fs::temp_directory_path() /
           ("tessera_w_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(config_from / "config.json", dir_ / "config.json");
  }
  ~TempModel() { fs::remove_all(dir_); }
  const fs::path& dir() const { return dir_; }
  void write(const std::vector<RawTensor>& tensors) const {
    write_raw(dir_ / "model.safetensors", tensors);
  }

 private:
  fs::path dir_;
};

ModelWeights load(const fs::path& dir) { return load_model_weights(dir, load_model_config(dir)); }

std::string load_error(const fs::path& dir) {
  try {
    (void)load(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string f32_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

// ---------------------------------------------------------------- shapes from the config
// DSV4.md §3 restated independently of the loader's plan.
void expect_shape(const Tensor& t, std::vector<int64_t> shape, const std::string& what) {
  EXPECT_EQ(t.shape, shape) << what;
  int64_t n = 1;
  for (auto d : shape) n *= d;
  EXPECT_EQ(t.numel(), n) << what;
}

void expect_model_shapes(const ModelConfig& c, const ModelWeights& w) {
  const int64_t D = c.hidden_size, hc = c.hc_mult, mix = (2 + hc) * hc, I = c.moe_intermediate_size;
  expect_shape(w.embed, {c.vocab_size, D}, "embed");
  expect_shape(w.head, {c.vocab_size, D}, "head");
  expect_shape(w.norm, {D}, "norm");
  expect_shape(w.hc_head_fn, {hc, hc * D}, "hc_head_fn");
  expect_shape(w.hc_head_base, {hc}, "hc_head_base");
  expect_shape(w.hc_head_scale, {1}, "hc_head_scale");
  ASSERT_EQ(static_cast<int64_t>(w.layers.size()), c.num_layers);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const Layer& l = w.layers[i];
    const std::string at = "layer " + std::to_string(i);
    expect_shape(l.hc_attn.fn, {mix, hc * D}, at + " hc_attn_fn");
    expect_shape(l.hc_ffn.scale, {3}, at + " hc_ffn_scale");
    expect_shape(l.attn.wq_b, {c.num_heads * c.head_dim, c.q_lora_rank}, at + " wq_b");
    expect_shape(l.attn.wo_a, {c.o_groups * c.o_lora_rank, c.num_heads * c.head_dim / c.o_groups},
                 at + " wo_a");
    expect_shape(l.attn.attn_sink, {c.num_heads}, at + " attn_sink");
    const int64_t m = c.compress_ratios[i];
    EXPECT_EQ(l.attn.compressor.has_value(), m != 0) << at;
    EXPECT_EQ(l.attn.indexer.has_value(), m == 4) << at;
    if (l.attn.compressor)
      expect_shape(l.attn.compressor->ape, {m, (m == 4 ? 2 : 1) * c.head_dim}, at);
    if (l.attn.indexer) {
      expect_shape(l.attn.indexer->wq_b, {c.index_n_heads * c.index_head_dim, c.q_lora_rank}, at);
      expect_shape(l.attn.indexer->compressor.wkv, {2 * c.index_head_dim, D}, at);
    }
    EXPECT_EQ(l.ffn.bias.has_value(), i >= c.num_hash_layers) << at;
    EXPECT_EQ(static_cast<int64_t>(l.ffn.tid2eid.size()),
              i < c.num_hash_layers ? c.vocab_size * c.experts_per_token : 0)
        << at;
    ASSERT_EQ(static_cast<int64_t>(l.ffn.experts.size()), c.n_routed_experts) << at;
    for (const Expert& e : l.ffn.experts) {
      expect_shape(e.w1, {I, D}, at + " w1");
      expect_shape(e.w2, {D, I}, at + " w2");
      expect_shape(e.w3, {I, D}, at + " w3");
    }
    expect_shape(l.ffn.shared.w2, {D, I}, at + " shared w2");
  }
}

TensorStorage<float> raw_floats(const fs::path& file, const std::string& name) {
  const SafetensorsFile f = SafetensorsFile::open(file);
  const auto* t = f.find(name);
  if (t == nullptr) throw std::runtime_error("no " + name);
  const auto data = f.data(*t);
  TensorStorage<float> out(static_cast<size_t>(t->numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    if (t->dtype == weights::DType::F32) {
      std::memcpy(&out[i], data.data() + 4 * i, 4);
    } else {  // BF16: the high half of an fp32
      uint32_t bits = 0;
      std::memcpy(reinterpret_cast<char*>(&bits) + 2, data.data() + 2 * i, 2);
      std::memcpy(&out[i], &bits, 4);
    }
  }
  return out;
}

TEST(Dsv4Weights, LoadsTinyASavePretrainedNames) {
  const ModelConfig c = load_model_config(kParity / "tiny-a");
  const ModelWeights w = load_model_weights(kParity / "tiny-a", c);
  expect_model_shapes(c, w);
  const fs::path file = kParity / "tiny-a/model.safetensors";
  // transformers writes attn.kv_norm as "attn.norm" and the embedding as "embed_tokens".
  EXPECT_EQ(w.layers[2].attn.kv_norm.data, raw_floats(file, "model.layers.2.attn.norm.weight"));
  EXPECT_EQ(w.embed.data, raw_floats(file, "model.embed_tokens.weight"));
  EXPECT_EQ(w.hc_head_fn.data, raw_floats(file, "model.hc_head.hc_fn"));
  EXPECT_EQ(w.layers[3].ffn.experts[1].w2.data,
            raw_floats(file, "model.layers.3.ffn.experts.1.w2.weight"));
}

TEST(Dsv4Weights, LoadsTinyBShardedOfficialBf16) {
  const ModelConfig c = load_model_config(kParity / "tiny-b");
  const ModelWeights w = load_model_weights(kParity / "tiny-b", c);
  expect_model_shapes(c, w);
  EXPECT_EQ(w.embed.data,
            raw_floats(kParity / "tiny-b/model-00001-of-00002.safetensors", "embed.weight"));
  EXPECT_EQ(w.norm.data,
            raw_floats(kParity / "tiny-b/model-00002-of-00002.safetensors", "norm.weight"));
}

// Every FP8 and FP4 tensor of tiny-fp8 against the reference decoders above.
TEST(Dsv4Weights, TinyFp8MatchesIndependentDequantization) {
  const ModelConfig c = load_model_config(kParity / "tiny-fp8");
  const ModelWeights w = load_model_weights(kParity / "tiny-fp8", c);
  expect_model_shapes(c, w);
  std::map<std::string, const Tensor*> loaded;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const Layer& l = w.layers[i];
    const std::string p = "layers." + std::to_string(i) + ".";
    loaded[p + "attn.wq_a"] = &l.attn.wq_a;
    loaded[p + "attn.wq_b"] = &l.attn.wq_b;
    loaded[p + "attn.wkv"] = &l.attn.wkv;
    loaded[p + "attn.wo_a"] = &l.attn.wo_a;
    loaded[p + "attn.wo_b"] = &l.attn.wo_b;
    if (l.attn.indexer) loaded[p + "attn.indexer.wq_b"] = &l.attn.indexer->wq_b;
    loaded[p + "ffn.shared_experts.w1"] = &l.ffn.shared.w1;
    loaded[p + "ffn.shared_experts.w2"] = &l.ffn.shared.w2;
    loaded[p + "ffn.shared_experts.w3"] = &l.ffn.shared.w3;
    for (size_t e = 0; e < l.ffn.experts.size(); ++e) {
      const std::string q = p + "ffn.experts." + std::to_string(e) + ".";
      loaded[q + "w1"] = &l.ffn.experts[e].w1;
      loaded[q + "w2"] = &l.ffn.experts[e].w2;
      loaded[q + "w3"] = &l.ffn.experts[e].w3;
    }
  }
  const SafetensorsFile f = SafetensorsFile::open(kParity / "tiny-fp8/model.safetensors");
  int fp8 = 0, fp4 = 0;
  for (const auto& [base, tensor] : loaded) {
    const auto* wi = f.find(base + ".weight");
    const auto* si = f.find(base + ".scale");
    ASSERT_TRUE(wi != nullptr && si != nullptr) << base;
    const auto wb = f.data(*wi);
    const auto sb = f.data(*si);
    const int64_t rows = tensor->shape[0], cols = tensor->shape[1], scale_cols = si->shape[1];
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t col = 0; col < cols; ++col) {
        float expected;
        if (wi->dtype == weights::DType::F8_E4M3) {
          expected = ref_e4m3(static_cast<uint8_t>(wb[r * cols + col])) *
                     ref_e8m0(static_cast<uint8_t>(sb[(r / 128) * scale_cols + col / 128]));
        } else {
          ASSERT_EQ(wi->dtype, weights::DType::I8) << base;
          const auto byte = static_cast<uint8_t>(wb[r * (cols / 2) + col / 2]);
          expected = ref_e2m1(col % 2 == 0 ? byte & 0xF : byte >> 4) *
                     ref_e8m0(static_cast<uint8_t>(sb[r * scale_cols + col / 32]));
        }
        ASSERT_EQ(tensor->data[r * cols + col], expected)
            << base << " [" << r << ", " << col << "]";
      }
    (wi->dtype == weights::DType::F8_E4M3 ? fp8 : fp4) += 1;
  }
  EXPECT_EQ(fp8, 4 * 8 + 2);  // 8 per layer + 2 indexers
  EXPECT_EQ(fp4, 4 * 4 * 3);  // 4 layers x 4 experts x 3
  EXPECT_FALSE(w.layers[0].ffn.tid2eid.empty());
}

// ---------------------------------------------------------------- transformers module names
// Official -> transformers module names (TRANSFORMERS_NOTES.md §J), restated for the test.
std::string to_transformers_name(const std::string& official) {
  static const std::vector<std::pair<std::string, std::string>> top = {
      {"embed.weight", "model.embed_tokens.weight"}, {"head.weight", "lm_head.weight"},
      {"norm.weight", "model.norm.weight"},          {"hc_head_fn", "model.hc_head.hc_fn"},
      {"hc_head_base", "model.hc_head.hc_base"},     {"hc_head_scale", "model.hc_head.hc_scale"}};
  static const std::vector<std::pair<std::string, std::string>> layer = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"hc_attn_fn", "attn_hc.fn"},
      {"hc_attn_base", "attn_hc.base"},
      {"hc_attn_scale", "attn_hc.scale"},
      {"hc_ffn_fn", "ffn_hc.fn"},
      {"hc_ffn_base", "ffn_hc.base"},
      {"hc_ffn_scale", "ffn_hc.scale"},
      {"attn.attn_sink", "self_attn.sinks"},
      {"attn.wq_a.weight", "self_attn.q_a_proj.weight"},
      {"attn.q_norm.weight", "self_attn.q_a_norm.weight"},
      {"attn.wq_b.weight", "self_attn.q_b_proj.weight"},
      {"attn.wkv.weight", "self_attn.kv_proj.weight"},
      {"attn.kv_norm.weight", "self_attn.kv_norm.weight"},
      {"attn.wo_a.weight", "self_attn.o_a_proj.weight"},
      {"attn.wo_b.weight", "self_attn.o_b_proj.weight"},
      {"attn.compressor.wkv.weight", "self_attn.compressor.kv_proj.weight"},
      {"attn.compressor.wgate.weight", "self_attn.compressor.gate_proj.weight"},
      {"attn.compressor.ape", "self_attn.compressor.position_bias"},
      {"attn.compressor.norm.weight", "self_attn.compressor.kv_norm.weight"},
      {"attn.indexer.wq_b.weight", "self_attn.compressor.indexer.q_b_proj.weight"},
      {"attn.indexer.weights_proj.weight",
       "self_attn.compressor.indexer.scorer.weights_proj.weight"},
      {"attn.indexer.compressor.wkv.weight", "self_attn.compressor.indexer.kv_proj.weight"},
      {"attn.indexer.compressor.wgate.weight", "self_attn.compressor.indexer.gate_proj.weight"},
      {"attn.indexer.compressor.ape", "self_attn.compressor.indexer.position_bias"},
      {"attn.indexer.compressor.norm.weight", "self_attn.compressor.indexer.kv_norm.weight"},
      {"ffn.gate.weight", "mlp.gate.weight"},
      {"ffn.gate.bias", "mlp.gate.e_score_correction_bias"},
      {"ffn.gate.tid2eid", "mlp.gate.tid2eid"},
      {"ffn.shared_experts.w1.weight", "mlp.shared_experts.gate_proj.weight"},
      {"ffn.shared_experts.w2.weight", "mlp.shared_experts.down_proj.weight"},
      {"ffn.shared_experts.w3.weight", "mlp.shared_experts.up_proj.weight"}};
  for (const auto& [o, h] : top)
    if (official == o) return h;
  const size_t dot = official.find('.', std::string("layers.").size());
  const std::string rest = official.substr(dot + 1);
  for (const auto& [o, h] : layer)
    if (rest == o) return "model." + official.substr(0, dot + 1) + h;
  throw std::runtime_error("no transformers name for " + official);
}

TEST(Dsv4Weights, TransformersModuleNamesWithStackedExpertsEqualOfficial) {
  const ModelConfig c = load_model_config(kParity / "tiny-b");
  std::vector<RawTensor> official;
  for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"})
    for (auto& t : read_raw(kParity / "tiny-b" / shard)) official.push_back(std::move(t));
  std::vector<RawTensor> hf;
  for (const auto& t : official)
    if (t.name.find(".ffn.experts.") == std::string::npos)
      hf.push_back({to_transformers_name(t.name), t.dtype, t.shape, t.bytes});
  const int64_t E = c.n_routed_experts, I = c.moe_intermediate_size, D = c.hidden_size;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".ffn.experts.";
    RawTensor gate_up{"model.layers." + std::to_string(i) + ".mlp.experts.gate_up_proj",
                      "BF16",
                      {E, 2 * I, D},
                      ""};
    RawTensor down{
        "model.layers." + std::to_string(i) + ".mlp.experts.down_proj", "BF16", {E, D, I}, ""};
    for (int64_t e = 0; e < E; ++e) {
      const std::string q = p + std::to_string(e) + ".";
      gate_up.bytes += find_raw(official, q + "w1.weight").bytes;  // gate rows first
      gate_up.bytes += find_raw(official, q + "w3.weight").bytes;
      down.bytes += find_raw(official, q + "w2.weight").bytes;
    }
    hf.push_back(std::move(gate_up));
    hf.push_back(std::move(down));
  }
  TempModel model(kParity / "tiny-b");
  model.write(hf);
  const ModelWeights a = load_model_weights(kParity / "tiny-b", c);
  const ModelWeights b = load_model_weights(model.dir(), c);
  expect_model_shapes(c, b);
  EXPECT_EQ(a.head.data, b.head.data);
  EXPECT_EQ(a.hc_head_fn.data, b.hc_head_fn.data);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const Layer& la = a.layers[i];
    const Layer& lb = b.layers[i];
    EXPECT_EQ(la.attn.kv_norm.data, lb.attn.kv_norm.data) << i;
    EXPECT_EQ(la.attn.wo_a.data, lb.attn.wo_a.data) << i;
    EXPECT_EQ(la.hc_ffn.base.data, lb.hc_ffn.base.data) << i;
    EXPECT_EQ(la.ffn.tid2eid, lb.ffn.tid2eid) << i;
    EXPECT_EQ(la.ffn.shared.w1.data, lb.ffn.shared.w1.data) << i;
    if (la.attn.indexer)
      EXPECT_EQ(la.attn.indexer->weights_proj.data, lb.attn.indexer->weights_proj.data) << i;
    if (la.attn.compressor) EXPECT_EQ(la.attn.compressor->ape.data, lb.attn.compressor->ape.data);
    for (int64_t e = 0; e < E; ++e) {
      EXPECT_EQ(la.ffn.experts[e].w1.data, lb.ffn.experts[e].w1.data) << i << "/" << e;
      EXPECT_EQ(la.ffn.experts[e].w3.data, lb.ffn.experts[e].w3.data) << i << "/" << e;
      EXPECT_EQ(la.ffn.experts[e].w2.data, lb.ffn.experts[e].w2.data) << i << "/" << e;
    }
  }
}

// ---------------------------------------------------------------- broken checkpoints
// Each starts from tiny-a (F32, save_pretrained names) and breaks one thing.
class BrokenTinyA : public ::testing::Test {
 protected:
  BrokenTinyA()
      : model_(kParity / "tiny-a"), tensors_(read_raw(kParity / "tiny-a/model.safetensors")) {}
  RawTensor& at(const std::string& name) { return find_raw(tensors_, name); }
  void drop(const std::string& name) {
    std::erase_if(tensors_, [&](const RawTensor& t) { return t.name == name; });
  }
  std::string error() {
    model_.write(tensors_);
    return load_error(model_.dir());
  }
  ModelWeights load_ok() {
    model_.write(tensors_);
    return load(model_.dir());
  }

  TempModel model_;
  std::vector<RawTensor> tensors_;
};

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "in: " << (haystack)

TEST_F(BrokenTinyA, MissingTensorIsNamedWithConfigDims) {
  drop("model.layers.1.attn.indexer.wq_b.weight");
  EXPECT_HAS(error(),
             "missing tensor 'layers.1.attn.indexer.wq_b.weight' [index_n_heads * "
             "index_head_dim, q_lora_rank] = [64, 32]");
}

TEST_F(BrokenTinyA, WrongDtypeIsNamed) {
  at("model.layers.0.attn.attn_sink").dtype = "I32";  // same byte size
  EXPECT_HAS(error(),
             "tensor 'layers.0.attn.attn_sink' (stored as 'model.layers.0.attn.attn_sink' "
             "in model.safetensors): dtype I32, expected F32, BF16 or F16");
}

TEST_F(BrokenTinyA, WrongShapeIsNamed) {
  at("model.layers.0.attn.wq_a.weight").shape = {64, 32};
  EXPECT_HAS(error(),
             "shape [64, 32], but the config implies [q_lora_rank, hidden_size] = [32, 64]");
}

TEST_F(BrokenTinyA, ExtraTensorIsAnErrorWithSuggestionButMtpIsIgnored) {
  tensors_.push_back({"mtp.0.attn.wq_a.weight", "F32", {1}, f32_bytes({1})});
  (void)load_ok();
  tensors_.push_back({"model.layers.0.attn.wq_c.weight", "F32", {1}, f32_bytes({1})});
  EXPECT_HAS(error(),
             "unexpected tensor 'layers.0.attn.wq_c.weight' (stored as "
             "'model.layers.0.attn.wq_c.weight' in model.safetensors) (did you mean "
             "'layers.0.attn.wq_a.weight'?)");
}

TEST_F(BrokenTinyA, AllProblemsAreListedAtOnce) {
  drop("model.norm.weight");
  at("model.layers.3.ffn.gate.bias").shape = {2, 2};
  tensors_.push_back({"model.layers.9.attn_norm.weight", "F32", {1}, f32_bytes({1})});
  const std::string err = error();
  EXPECT_HAS(err, "does not match its config (3 problems)");
  EXPECT_HAS(err, "missing tensor 'norm.weight'");
  EXPECT_HAS(err, "tensor 'layers.3.ffn.gate.bias'");
  EXPECT_HAS(err, "unexpected tensor 'layers.9.attn_norm.weight'");
}

TEST_F(BrokenTinyA, DuplicateSpellingsOfOneTensor) {
  RawTensor copy = at("head.weight");
  copy.name = "lm_head.weight";
  tensors_.push_back(copy);
  EXPECT_HAS(error(), "tensor 'head.weight' is stored twice");
}

TEST_F(BrokenTinyA, TruncatedFileIsRefused) {
  model_.write(tensors_);
  const fs::path file = model_.dir() / "model.safetensors";
  fs::resize_file(file, fs::file_size(file) - 100);
  EXPECT_HAS(load_error(model_.dir()), "run past the end of the data section");
}

TEST_F(BrokenTinyA, Fp8WeightNeedsItsScale) {
  RawTensor& wq_a = at("model.layers.0.attn.wq_a.weight");  // [32, 64]
  wq_a.dtype = "F8_E4M3";
  wq_a.bytes = std::string(32 * 64, '\x38');  // 1.0
  EXPECT_HAS(error(),
             "tensor 'layers.0.attn.wq_a.weight' (stored as "
             "'model.layers.0.attn.wq_a.weight' in model.safetensors) is F8_E4M3 but its "
             "scale 'layers.0.attn.wq_a.scale' is missing");
  tensors_.push_back({"model.layers.0.attn.wq_a.scale", "F8_E8M0", {2, 2}, std::string(4, '\x80')});
  EXPECT_HAS(error(),
             "scale 'layers.0.attn.wq_a.scale' (stored as 'model.layers.0.attn.wq_a.scale' "
             "in model.safetensors): shape [2, 2], expected [1, 1]");
  at("model.layers.0.attn.wq_a.scale") = {
      "model.layers.0.attn.wq_a.scale", "F8_E8M0", {1, 1}, "\x80"};
  EXPECT_EQ(load_ok().layers[0].attn.wq_a.data, TensorStorage<float>(32 * 64, 2.0f));
  // transformers' spelling: an fp32 multiplier named weight_scale_inv.
  at("model.layers.0.attn.wq_a.scale") = {
      "model.layers.0.attn.wq_a.weight_scale_inv", "F32", {1, 1}, f32_bytes({0.25f})};
  EXPECT_EQ(load_ok().layers[0].attn.wq_a.data, TensorStorage<float>(32 * 64, 0.25f));
}

TEST_F(BrokenTinyA, Fp4OnlyForRoutedExpertsWithPer32Scales) {
  RawTensor& w1 = at("model.layers.0.ffn.experts.0.w1.weight");  // [32, 64]
  w1 = {w1.name, "I8", {32, 32}, std::string(32 * 32, '\x71')};
  std::string scale;
  for (int r = 0; r < 32; ++r) scale += std::string("\x7e\x81", 2);  // 0.5, 4.0
  tensors_.push_back({"model.layers.0.ffn.experts.0.w1.scale", "F8_E8M0", {32, 2}, scale});
  const ModelWeights w = load_ok();
  for (int c = 0; c < 64; ++c)
    EXPECT_EQ(w.layers[0].ffn.experts[0].w1.data[5 * 64 + c],
              (c % 2 == 0 ? 0.5f : 6.0f) * (c < 32 ? 0.5f : 4.0f))
        << c;
  // The same bytes declared as F4 count elements, not bytes.
  at("model.layers.0.ffn.experts.0.w1.weight").dtype = "F4";
  at("model.layers.0.ffn.experts.0.w1.weight").shape = {32, 64};
  EXPECT_EQ(load_ok().layers[0].ffn.experts[0].w1.data, w.layers[0].ffn.experts[0].w1.data);
  at("model.layers.0.ffn.experts.0.w1.scale").shape = {32, 1};
  at("model.layers.0.ffn.experts.0.w1.scale").bytes.resize(32);
  EXPECT_HAS(error(), "shape [32, 1], expected [32, 2] (one per 32 inputs");
  // A shared expert may not be FP4.
  RawTensor& shared = at("model.layers.0.ffn.shared_experts.w1.weight");
  shared = {shared.name, "I8", {32, 32}, std::string(32 * 32, '\0')};
  EXPECT_HAS(error(),
             "tensor 'layers.0.ffn.shared_experts.w1.weight' (stored as "
             "'model.layers.0.ffn.shared_experts.w1.weight' in model.safetensors): dtype "
             "I8 is not allowed here");
}

TEST_F(BrokenTinyA, Tid2eidAcceptsI32AndRangeChecksIds) {
  const std::vector<int32_t> expected = load_ok().layers[1].ffn.tid2eid;
  RawTensor& table = at("model.layers.1.ffn.gate.tid2eid");  // I64 [512, 2]
  std::string narrow;
  for (size_t i = 0; i < table.bytes.size(); i += 8) narrow += table.bytes.substr(i, 4);
  table.dtype = "I32";
  table.bytes = narrow;
  EXPECT_EQ(load_ok().layers[1].ffn.tid2eid, expected);
  const int32_t bad = 4;  // == n_routed_experts
  std::memcpy(table.bytes.data() + 4 * 7, &bad, 4);
  EXPECT_HAS(error(),
             "tensor 'layers.1.ffn.gate.tid2eid' (stored as "
             "'model.layers.1.ffn.gate.tid2eid' in model.safetensors): token 3 maps to "
             "expert id 4, outside [0, 4)");
}

}  // namespace
}  // namespace tessera::dsv4
