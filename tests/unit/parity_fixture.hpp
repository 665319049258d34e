// Reads a parity fixture written by tools/fixtures/make_parity.py: tokens.json and
// golden.safetensors (transformers' fp32 logits for the prefill and each decode step).
#pragma once

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "weights/safetensors.hpp"

namespace tessera::testing {

inline std::filesystem::path parity_root() {
  return std::filesystem::path(TESSERA_SOURCE_DIR) / "tests/data/parity";
}

inline std::vector<std::string> parity_fixture_names() {
  std::vector<std::string> names;
  if (!std::filesystem::exists(parity_root())) return names;
  for (const auto& entry : std::filesystem::directory_iterator(parity_root()))
    if (std::filesystem::exists(entry.path() / "golden.safetensors"))
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

struct GoldenLogits {
  int64_t rows = 0, vocab = 0;
  std::vector<float> values;
  const float* row(int64_t r) const { return values.data() + r * vocab; }
};

struct ParityFixture {
  std::filesystem::path dir;
  std::vector<int32_t> prompt, decode;
  GoldenLogits prefill, decode_steps;
};

inline GoldenLogits read_logits(const weights::SafetensorsFile& file, const std::string& name) {
  const weights::TensorInfo* info = file.find(name);
  if (info == nullptr) throw std::runtime_error("golden.safetensors lacks " + name);
  GoldenLogits g;
  g.rows = info->shape.at(0);
  g.vocab = info->shape.at(1);
  g.values.resize(static_cast<size_t>(g.rows * g.vocab));
  const auto bytes = file.data(*info);
  std::memcpy(g.values.data(), bytes.data(), g.values.size() * sizeof(float));
  return g;
}

inline ParityFixture load_parity_fixture(const std::string& name) {
  ParityFixture f;
  f.dir = parity_root() / name;
  std::ifstream in(f.dir / "tokens.json");
  const auto tokens = nlohmann::json::parse(in);
  f.prompt = tokens.at("prompt").get<std::vector<int32_t>>();
  f.decode = tokens.at("decode").get<std::vector<int32_t>>();
  const auto golden = weights::SafetensorsFile::open(f.dir / "golden.safetensors");
  f.prefill = read_logits(golden, "prefill_logits");
  f.decode_steps = read_logits(golden, "decode_logits");
  return f;
}

}  // namespace tessera::testing
