#include "model/random_checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <span>
#include <string_view>
#include <vector>

#include "model/checkpoint_presets.hpp"
#include "model/dsv4_weight_plan.hpp"
#include "model/official_formats.hpp"
#include "ops/compute_threads.hpp"
#include "util/check.hpp"
#include "weights/numeric_encoding.hpp"
#include "weights/safetensors_writer.hpp"

namespace tessera::dsv4 {
namespace {

class Rng {  // SplitMix64 (Steele et al. 2014)
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Sum of four 16-bit uniforms, centred and scaled to unit variance (Irwin-Hall, n = 4).
  float normal() {
    const uint64_t r = next();
    const float sum =
        static_cast<float>((r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48)) /
        65536.0f;
    return (sum - 2.0f) * 1.7320508f;  // variance of the sum is 4/12
  }

 private:
  uint64_t state_;
};

bool has(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// How a tensor's values are drawn: constant `value` when std == 0, else N(0, std^2).
struct Distribution {
  float std = 0.0f;
  float value = 1.0f;
};

Distribution distribution_of(const TensorSpec& spec) {
  const std::string& n = spec.name;
  if (n == "embed.weight") return {1.0f};
  if (spec.kind == StorageKind::Linear || spec.kind == StorageKind::RoutedExpert) {
    if (has(n, "hc_")) return {0.01f};
    return {1.0f / std::sqrt(static_cast<float>(spec.shape.back()))};
  }
  if (n == "hc_head_scale") return {0.0f, 1.0f};
  if (has(n, "hc_") && has(n, "_fn")) return {0.01f};
  if (has(n, "hc_")) return {0.3f};  // bases and per-layer scales
  if (has(n, "attn_sink")) return {0.6f};
  if (has(n, ".ape")) return {0.3f};
  if (has(n, "gate.bias")) return {0.06f};
  return {0.0f, 1.0f};  // norms
}

// Every tensor's rows are drawn in blocks, each from its own stream seeded by (seed, tensor,
// block), so the file does not depend on how many threads draw them. A batch of blocks (up to
// ~64 MiB of values) is drawn and encoded in parallel, then written in order.
class TensorStreamer {
 public:
  TensorStreamer(weights::SafetensorsWriter& out, uint64_t seed) : out_(out), seed_(seed) {}

  void write(const TensorSpec& spec, const ModelConfig& c) {
    const Distribution dist = distribution_of(spec);
    const int64_t cols = spec.shape.size() == 2 ? spec.shape[1] : 1;
    const int64_t rows = spec.shape.empty() ? 1 : spec.shape[0];
    Rng tensor_rng(seed_ ^ (0xD1B54A32D192ED03ull * ++tensor_index_));
    tensor_seed_ = tensor_rng.next();
    switch (official_format(spec)) {
      case StoredFormat::I64Table:
        return write_table(rows, cols, c.n_routed_experts);
      case StoredFormat::Fp8Blocks:
        return write_fp8(dist, rows, cols);
      case StoredFormat::Fp4Groups:
        return write_fp4(dist, rows, cols);
      case StoredFormat::F32:
      case StoredFormat::BF16:
        return write_plain(dist, rows, cols, official_format(spec) == StoredFormat::BF16);
    }
  }

 private:
  static constexpr int64_t kBatchValues = 16 << 20;

  // Draws the values of row block `block` ([rows, cols]) into `values`.
  void draw(const Distribution& d, int64_t block, int64_t count, std::vector<float>& values) const {
    Rng rng(tensor_seed_ ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(block + 1)));
    values.resize(static_cast<size_t>(count));
    for (float& v : values) v = d.std == 0.0f ? d.value : d.std * rng.normal();
  }

  // Runs encode(block, first_row, rows_in_block, bytes) for the blocks of `block_rows` rows, in
  // parallel batches, and appends each block's `bytes_per_row * rows` bytes in order.
  template <typename Encode>
  void encode_blocks(int64_t rows, int64_t cols, int64_t block_rows, int64_t bytes_per_row,
                     const Encode& encode) {
    const int64_t blocks = (rows + block_rows - 1) / block_rows;
    const int64_t per_batch = std::max<int64_t>(1, kBatchValues / (block_rows * cols));
    for (int64_t b0 = 0; b0 < blocks; b0 += per_batch) {
      const int64_t n = std::min(per_batch, blocks - b0);
      const int64_t first_row = b0 * block_rows;
      const int64_t batch_rows = std::min(rows, (b0 + n) * block_rows) - first_row;
      bytes_.resize(static_cast<size_t>(batch_rows * bytes_per_row));
      ops::parallel_for(n, ops::compute_threads(), [&](int64_t i) {
        const int64_t r0 = (b0 + i) * block_rows, count = std::min(block_rows, rows - r0);
        encode(b0 + i, r0, count,
               std::span(bytes_).subspan(static_cast<size_t>((r0 - first_row) * bytes_per_row),
                                         static_cast<size_t>(count * bytes_per_row)));
      });
      out_.append(bytes_);
    }
  }

  void write_plain(const Distribution& d, int64_t rows, int64_t cols, bool bf16) {
    const int64_t width = bf16 ? 2 : 4;
    const int64_t block_rows = std::max<int64_t>(1, (1 << 18) / cols);
    encode_blocks(rows, cols, block_rows, cols * width,
                  [&](int64_t block, int64_t, int64_t n, std::span<uint8_t> out) {
                    std::vector<float> values;
                    draw(d, block, n * cols, values);
                    for (size_t i = 0; i < values.size(); ++i) {
                      if (bf16) {
                        const uint16_t b = weights::f32_to_bf16(values[i]);
                        out[2 * i] = static_cast<uint8_t>(b & 0xFF);
                        out[2 * i + 1] = static_cast<uint8_t>(b >> 8);
                      } else {
                        std::memcpy(&out[4 * i], &values[i], 4);  // little-endian host
                      }
                    }
                  });
  }

  void write_fp8(const Distribution& d, int64_t rows, int64_t cols) {
    const int64_t col_blocks = (cols + 127) / 128;
    std::vector<uint8_t> scales(static_cast<size_t>((rows + 127) / 128 * col_blocks));
    encode_blocks(rows, cols, 128, cols,
                  [&](int64_t block, int64_t, int64_t n, std::span<uint8_t> out) {
                    std::vector<float> values;
                    draw(d, block, n * cols, values);
                    weights::quantize_fp8_block_row(
                        values, n, cols, out,
                        std::span(scales).subspan(static_cast<size_t>(block * col_blocks),
                                                  static_cast<size_t>(col_blocks)));
                  });
    out_.append(scales);
  }

  void write_fp4(const Distribution& d, int64_t rows, int64_t cols) {
    constexpr int64_t kRows = 16;
    std::vector<uint8_t> scales(static_cast<size_t>(rows * cols / 32));
    encode_blocks(
        rows, cols, kRows, cols / 2,
        [&](int64_t block, int64_t r0, int64_t n, std::span<uint8_t> out) {
          std::vector<float> values;
          draw(d, block, n * cols, values);
          for (int64_t r = 0; r < n; ++r) {
            weights::quantize_fp4_row(
                std::span<const float>(values).subspan(static_cast<size_t>(r * cols),
                                                       static_cast<size_t>(cols)),
                out.subspan(static_cast<size_t>(r * cols / 2), static_cast<size_t>(cols / 2)),
                std::span(scales).subspan(static_cast<size_t>((r0 + r) * cols / 32),
                                          static_cast<size_t>(cols / 32)));
          }
        });
    out_.append(scales);
  }

  void write_table(int64_t rows, int64_t cols, int64_t experts) {
    Rng rng(tensor_seed_);
    std::vector<int64_t> ids(static_cast<size_t>(rows * cols));
    for (int64_t t = 0; t < rows; ++t) {
      const auto first = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(experts));
      for (int64_t k = 0; k < cols; ++k)  // distinct ids: consecutive mod E
        ids[static_cast<size_t>(t * cols + k)] = (first + k) % experts;
    }
    out_.append({reinterpret_cast<const uint8_t*>(ids.data()), ids.size() * sizeof(int64_t)});
  }

  weights::SafetensorsWriter& out_;
  uint64_t seed_;
  uint64_t tensor_index_ = 0;
  uint64_t tensor_seed_ = 0;
  std::vector<uint8_t> bytes_;
};

}  // namespace

uint64_t write_random_checkpoint(
    const ModelConfig& config, const std::filesystem::path& dir, uint64_t seed,
    const std::function<void(const CheckpointWriteProgress&)>& progress) {
  TS_CHECK(config.moe_intermediate_size % 32 == 0 && config.hidden_size % 32 == 0,
           "FP4 experts need widths divisible by 32 (hidden {}, moe {})", config.hidden_size,
           config.moe_intermediate_size);
  ModelWeights shapes;  // only shaped by the plan: nothing is allocated
  const std::vector<TensorSpec> specs = plan_model_tensors(config, shapes);
  std::vector<weights::TensorDeclaration> declarations;
  for (const auto& spec : specs)
    for (auto& d : official_declarations(spec)) declarations.push_back(std::move(d));
  uint64_t total = 0;
  for (const auto& d : declarations) total += d.byte_size();

  std::filesystem::create_directories(dir);
  {
    std::ofstream json(dir / "config.json", std::ios::trunc);
    json << official_config_json(config);
    TS_CHECK(json.good(), "cannot write {}", (dir / "config.json").string());
  }
  weights::SafetensorsWriter out(dir / "model.safetensors", std::move(declarations));
  TensorStreamer streamer(out, seed);
  CheckpointWriteProgress p;
  p.bytes_total = total;
  for (const auto& spec : specs) {
    streamer.write(spec, config);
    p.bytes_written += official_bytes(spec);
    p.tensor = spec.name;
    if (progress) progress(p);
  }
  out.close();
  return total;
}

}  // namespace tessera::dsv4
