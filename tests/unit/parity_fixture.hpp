// Reads a parity fixture written by tools/fixtures/make_parity.py: tokens.json and
// golden.safetensors (transformers' fp32 logits for the prefill and each decode step).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/runtime_options.hpp"
#include "weights/safetensors.hpp"

namespace tessera::testing {

inline std::filesystem::path parity_root() {
  return std::filesystem::path(TESSERA_SOURCE_DIR) / "tests/data/parity";
}

// Runtime options for the checkpoint in `dir` with the bf16 cache (kv_options: its options as
// JSON), the in-tree plugins and a small pool.
inline RuntimeOptions parity_options(const std::filesystem::path& dir,
                                     const std::string& kv_options) {
  RuntimeOptions o;
  o.model_dir = dir;
  o.kv_plugin = "bf16";
  o.kv_options_json = kv_options;
  o.plugin_dirs = {TESSERA_PLUGIN_DIR};
  o.memory_gib = 0.05;
  o.max_context = 4096;
  return o;
}

// A fixture is "partial" when its golden file keeps prefill logits for some positions only
// (prefill_positions), as the shipped-model fixture does; most consumers want full ones.
inline bool fixture_is_partial(const std::filesystem::path& dir) {
  const auto golden = weights::SafetensorsFile::open(dir / "golden.safetensors");
  return golden.find("prefill_positions") != nullptr;
}

inline std::vector<std::string> parity_fixture_names(bool include_partial = false) {
  std::vector<std::string> names;
  if (!std::filesystem::exists(parity_root())) return names;
  for (const auto& entry : std::filesystem::directory_iterator(parity_root()))
    if (std::filesystem::exists(entry.path() / "golden.safetensors") &&
        (include_partial || !fixture_is_partial(entry.path())))
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
  std::filesystem::path dir;  // the model directory (the fixture's own, or tokens.json "model_dir")
  std::vector<int32_t> prompt, decode;
  GoldenLogits prefill, decode_steps;
  std::vector<int32_t> prefill_positions;  // prompt position of each prefill row
  // First position where HF's indexer top-k had an exact tie (unspecified torch.topk order):
  // positions from here on can legitimately differ a little. INT64_MAX when none.
  int64_t first_indexer_tie = INT64_MAX;
  // The golden row for prompt position p, or nullptr when the fixture did not keep it.
  const float* prefill_at(int64_t p) const {
    for (size_t r = 0; r < prefill_positions.size(); ++r)
      if (prefill_positions[r] == p) return prefill.row(static_cast<int64_t>(r));
    return nullptr;
  }
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
  const auto fixture_dir = parity_root() / name;
  f.dir = fixture_dir;
  std::ifstream in(fixture_dir / "tokens.json");
  const auto tokens = nlohmann::json::parse(in);
  if (tokens.contains("model_dir"))
    f.dir = std::filesystem::path(TESSERA_SOURCE_DIR) / tokens.at("model_dir").get<std::string>();
  f.prompt = tokens.at("prompt").get<std::vector<int32_t>>();
  f.decode = tokens.at("decode").get<std::vector<int32_t>>();
  const auto golden = weights::SafetensorsFile::open(fixture_dir / "golden.safetensors");
  f.prefill = read_logits(golden, "prefill_logits");
  f.decode_steps = read_logits(golden, "decode_logits");
  if (const weights::TensorInfo* tie = golden.find("first_indexer_tie")) {
    int32_t value = 0;
    std::memcpy(&value, golden.data(*tie).data(), sizeof value);
    f.first_indexer_tie = value;
  }
  if (const weights::TensorInfo* pos = golden.find("prefill_positions")) {
    f.prefill_positions.resize(static_cast<size_t>(pos->shape.at(0)));
    std::memcpy(f.prefill_positions.data(), golden.data(*pos).data(),
                f.prefill_positions.size() * sizeof(int32_t));
  } else {
    for (int64_t r = 0; r < f.prefill.rows; ++r)
      f.prefill_positions.push_back(static_cast<int32_t>(r));
  }
  return f;
}

}  // namespace tessera::testing
