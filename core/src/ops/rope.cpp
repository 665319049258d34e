#include "ops/rope.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numbers>

namespace tessera::ops {

namespace {

// YaRN correction dimension: the pair index whose wavelength completes `rotations` turns over the
// original context (transformers' find_correction_dim).
double correction_dim(double rotations, int64_t dim, double base, double max_position) {
  return static_cast<double>(dim) * std::log(max_position / (rotations * 2.0 * std::numbers::pi)) /
         (2.0 * std::log(base));
}

std::atomic<uint64_t> next_table_id{1};

// A thread's cos and sin of the last (table, position) it rotated at: the same values std::cos
// and std::sin give again (a 64-sequence step rotates each token 3-4 times per layer).
struct Angles {
  uint64_t table = 0;
  int64_t position = -1;
  std::vector<float> cos, sin;
};

}  // namespace

RopeTable::RopeTable(int64_t rope_dim, double theta, const dsv4::YarnScaling* yarn)
    : rope_dim_(rope_dim), inv_freq_(static_cast<size_t>(rope_dim / 2)), id_(next_table_id++) {
  const int64_t half = rope_dim / 2;
  double low = 0, high = 0;
  if (yarn != nullptr && yarn->enabled) {
    low = std::max(0.0, std::floor(correction_dim(yarn->beta_fast, rope_dim, theta,
                                                  yarn->original_max_position)));
    high = std::min(
        static_cast<double>(rope_dim - 1),
        std::ceil(correction_dim(yarn->beta_slow, rope_dim, theta, yarn->original_max_position)));
    if (low == high) high += 0.001;
  }
  for (int64_t i = 0; i < half; ++i) {
    // float32 like torch: base ** (2i / dim) then reciprocal
    const float pos_freq = static_cast<float>(std::pow(
        theta, static_cast<double>(static_cast<float>(2 * i) / static_cast<float>(rope_dim))));
    const float extrapolated = 1.0f / pos_freq;
    float value = extrapolated;
    if (yarn != nullptr && yarn->enabled) {
      const float interpolated = 1.0f / (static_cast<float>(yarn->factor) * pos_freq);
      const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
      const float keep = 1.0f - static_cast<float>(ramp);  // extrapolation weight
      value = interpolated * (1.0f - keep) + extrapolated * keep;
    }
    inv_freq_[static_cast<size_t>(i)] = value;
  }
}

RopeTable RopeTable::for_layer(const dsv4::ModelConfig& config, int64_t layer) {
  if (config.compress_ratio(layer) == 0)
    return RopeTable(config.rope_dim, config.rope_theta, nullptr);
  return RopeTable(config.rope_dim, config.compress_rope_theta, &config.yarn);
}

void RopeTable::apply(float* x, int64_t rows, int64_t width, int64_t position, bool inverse) const {
  const int64_t half = rope_dim_ / 2;
  const int64_t start = width - rope_dim_;
  thread_local Angles memo;
  if (memo.table != id_ || memo.position != position) {
    memo.cos.resize(static_cast<size_t>(half));
    memo.sin.resize(static_cast<size_t>(half));
    const float pos = static_cast<float>(position);
    for (int64_t i = 0; i < half; ++i) {
      const float angle = pos * inv_freq_[static_cast<size_t>(i)];
      memo.cos[static_cast<size_t>(i)] = std::cos(angle);
      memo.sin[static_cast<size_t>(i)] = std::sin(angle);
    }
    memo.table = id_;
    memo.position = position;
  }
  const float* cos = memo.cos.data();
  const float* sin = memo.sin.data();
  for (int64_t r = 0; r < rows; ++r) {  // row by row: each row's pairs are contiguous
    float* pairs = x + r * width + start;
    for (int64_t i = 0; i < half; ++i) {
      const float c = cos[i], s = inverse ? -sin[i] : sin[i];
      const float a = pairs[2 * i], b = pairs[2 * i + 1];
      pairs[2 * i] = a * c - b * s;
      pairs[2 * i + 1] = b * c + a * s;
    }
  }
}

}  // namespace tessera::ops
