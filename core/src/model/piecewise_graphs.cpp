#include "model/piecewise_graphs.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

#include "util/check.hpp"

namespace tessera::dsv4 {

void PiecewiseGraphs::set_enabled(bool on) {
  enabled_ = on;
  if (!on) {
    drop_all();
  }
}

void PiecewiseGraphs::set_max_batch(int64_t max_batch) {
  TS_CHECK(max_batch >= 1, "CUDA graphs: the largest batch must be >= 1, got {}", max_batch);
  max_batch_ = max_batch;
  drop_all();
}

int64_t PiecewiseGraphs::bucket(int64_t T) const {
  if (T < 1 || T > max_batch_) {
    return 0;
  }
  const int64_t b = T <= 2 ? T : T <= 4 ? 4 : (T + 7) / 8 * 8;
  return std::min(b, max_batch_);
}

void PiecewiseGraphs::drop_all() {
  sets_.clear();
  layouts_.clear();
  capturing_.clear();
  warmed_.clear();
}

int64_t PiecewiseGraphs::begin_step(int64_t T, bool graphable) {
  const int64_t B = bucket(T);
  rows_ = B;
  next_ = 0;
  capturing_.clear();
  graphable_ = graphable && enabled() && B > 0;
  mode_ = Mode::kEager;
  if (!graphable_) {
    ++stats_.eager_steps;
    rows_ = T;
    return T;
  }
  stats_.padding_rows += B - T;
  if (scratch_.generation() != generation_) {  // buffers moved: every graph is stale
    drop_all();
    generation_ = scratch_.generation();
  }
  if (sets_.contains(B)) {
    mode_ = Mode::kReplay;
    ++stats_.replayed_steps;
  } else if (warmed_.contains(B)) {
    mode_ = Mode::kCapture;
    ++stats_.captured_steps;
  } else {
    ++stats_.eager_steps;  // the warm-up: sizes the scratch for B
  }
  return B;
}

void PiecewiseGraphs::require_layout(uint64_t key) {
  if (!graphable_) {
    return;
  }
  const auto [it, fresh] = layouts_.try_emplace(rows_, key);
  if (fresh || it->second == key) {
    return;
  }
  it->second = key;
  sets_.erase(rows_);
  warmed_.erase(rows_);
  if (mode_ == Mode::kReplay) {
    --stats_.replayed_steps;
    ++stats_.eager_steps;
  } else if (mode_ == Mode::kCapture) {
    --stats_.captured_steps;
    ++stats_.eager_steps;
  }
  mode_ = Mode::kEager;
}

void PiecewiseGraphs::fall_back() {
  capturing_.clear();
  if (mode_ == Mode::kReplay) {
    sets_.erase(rows_);
  }
  mode_ = Mode::kEager;
}

void PiecewiseGraphs::run(const std::function<void()>& piece) {
  if (mode_ != Mode::kEager && scratch_.generation() != generation_) {
    fall_back();  // a buffer moved during the step: the graphs hold its old address
  }
  if (mode_ == Mode::kReplay) {
    const std::vector<device::Graph>& set = sets_.at(rows_);
    if (next_ < set.size()) {
      device_.launch(set[next_++], stream_);
      ++stats_.pieces_replayed;
      return;
    }
    fall_back();  // more pieces than captured: the step differs from the captured one
  }
  if (mode_ == Mode::kCapture) {
    device::Graph graph;
    try {
      graph = device_.capture(stream_, piece);
    } catch (const std::exception& e) {
      spdlog::warn(
          "{}: CUDA graphs off for this model: a piece of the forward could not be "
          "captured ({}); steps run eagerly",
          device_.describe(), e.what());
      enabled_ = false;
      drop_all();
      mode_ = Mode::kEager;
      piece();  // what the capture recorded did not run
      return;
    }
    device_.launch(graph, stream_);
    capturing_.push_back(std::move(graph));
    ++stats_.pieces_captured;
    return;
  }
  piece();
}

void PiecewiseGraphs::end_step() {
  if (mode_ == Mode::kReplay && next_ != sets_.at(rows_).size()) {
    sets_.erase(rows_);  // fewer pieces than captured: make them again
  }
  if (mode_ == Mode::kCapture) {
    sets_[rows_] = std::move(capturing_);
  }
  capturing_.clear();
  if (!graphable_) {
    return;
  }
  if (scratch_.generation() != generation_) {  // this step moved buffers
    drop_all();
    generation_ = scratch_.generation();
  }
  warmed_.insert(rows_);
}

}  // namespace tessera::dsv4
