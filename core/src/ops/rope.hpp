// Rotary position embedding as DeepSeek-V4 uses it: interleaved pairs (2i, 2i+1) on the TRAILING
// rope_dim channels of each vector (DSV4.md §2, TRANSFORMERS_NOTES.md §C). Window-only layers use
// plain RoPE with rope_theta; compressed layers use compress_rope_theta with YaRN frequency
// blending (Peng et al. 2023, "YaRN", eq. for the ramp) and no magnitude scaling.
#pragma once

#include <cstdint>
#include <vector>

#include "weights/dsv4_config.hpp"

namespace tessera::ops {

class RopeTable {
 public:
  RopeTable() = default;
  RopeTable(int64_t rope_dim, double theta, const dsv4::YarnScaling* yarn);
  // For layer `layer` of the model: plain for ratio 0, YaRN-blended otherwise.
  static RopeTable for_layer(const dsv4::ModelConfig& config, int64_t layer);

  // Rotates the trailing rope_dim channels of `rows` vectors of `width` values, all at `position`;
  // inverse rotates by -angle (used on the attention output). A token's q, kv, indexer q and
  // output are rotated at one position: each thread keeps the last position's cos and sin.
  void apply(float* x, int64_t rows, int64_t width, int64_t position, bool inverse = false) const;

  const std::vector<float>& inv_freq() const { return inv_freq_; }

 private:
  int64_t rope_dim_ = 0;
  std::vector<float> inv_freq_;  // [rope_dim / 2]
  uint64_t id_ = 0;              // names these frequencies in a thread's cos / sin memo
};

}  // namespace tessera::ops
