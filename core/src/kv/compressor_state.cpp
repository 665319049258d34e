#include "kv/compressor_state.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/softmax_pool.hpp"
#include "util/check.hpp"

namespace tessera::dsv4 {

CompressorState::CompressorState(int64_t ratio, int64_t dim)
    : ratio_(ratio), dim_(dim), width_(ratio == 4 ? 2 * dim : dim), overlap_(ratio == 4) {}

void CompressorState::allocate_windows() {
  const auto values = static_cast<size_t>(ratio_ * width_);
  for (WindowBuffer* b : {&kv_, &gate_}) {
    b->resize(values);
  }
  if (overlap_) {
    prev_kv_.resize(values);
    prev_gate_.resize(values);
  }
}

int64_t CompressorState::state_bytes() const {
  return static_cast<int64_t>((kv_.size() + gate_.size() + prev_kv_.size() + prev_gate_.size()) *
                              sizeof(float));
}

std::optional<std::vector<float>> CompressorState::push(int64_t position, const float* kv,
                                                        const float* gate) {
  TS_CHECK(ratio_ > 0, "compressor state used on a layer without compression");
  if (kv_.empty()) {
    allocate_windows();
  }
  const int64_t slot = position % ratio_;
  std::copy(kv, kv + width_, kv_.begin() + slot * width_);
  std::copy(gate, gate + width_, gate_.begin() + slot * width_);
  if (slot != ratio_ - 1) {
    ++pending_;
    return std::nullopt;
  }
  pending_ = 0;

  std::vector<float> entry(static_cast<size_t>(dim_));
  const int64_t offset = overlap_ ? dim_ : 0;  // current window's channels: second half if overlap
  PoolRows parts[2] = {{kv_.data() + offset, gate_.data() + offset, ratio_, width_},
                       {prev_kv_.data(), prev_gate_.data(), ratio_, width_}};
  softmax_pool(std::span<const PoolRows>(parts, overlap_ && has_previous_ ? 2 : 1), dim_,
               entry.data());
  if (overlap_) {
    prev_kv_.swap(kv_);
    prev_gate_.swap(gate_);
    has_previous_ = true;
  }
  return entry;
}

CompressorSnapshot CompressorState::snapshot() const {
  TS_CHECK(pending_ == 0, "compressor snapshot inside a window ({} of {} tokens pushed)", pending_,
           ratio_);
  CompressorSnapshot s;
  s.has_previous = has_previous_;
  if (overlap_ && has_previous_) {
    s.prev_kv.assign(prev_kv_.begin(), prev_kv_.end());
    s.prev_gate.assign(prev_gate_.begin(), prev_gate_.end());
  }
  return s;
}

void CompressorState::restore(const CompressorSnapshot& snapshot) {
  TS_CHECK(ratio_ > 0, "compressor restore on a layer without compression");
  pending_ = 0;
  has_previous_ = overlap_ && snapshot.has_previous;
  if (has_previous_) {
    const auto values = static_cast<size_t>(ratio_ * width_);
    TS_CHECK(snapshot.prev_kv.size() == values && snapshot.prev_gate.size() == values,
             "compressor snapshot of {} values restored into a state of {}",
             snapshot.prev_kv.size(), values);
    prev_kv_.assign(snapshot.prev_kv.begin(), snapshot.prev_kv.end());
    prev_gate_.assign(snapshot.prev_gate.begin(), snapshot.prev_gate.end());
  }
}

}  // namespace tessera::dsv4
