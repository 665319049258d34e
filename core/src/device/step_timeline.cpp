#include "device/step_timeline.hpp"

#include <algorithm>

#include "util/check.hpp"

namespace tessera::device {

void StepTimeline::record_next() {
  if (used_ == events_.size()) {
    events_.push_back(device_.create_timing_event());
  }
  device_.record(events_[used_++], stream_);
}

void StepTimeline::begin() {
  used_ = 0;
  labels_.clear();
  record_next();
}

void StepTimeline::mark(std::string_view label) {
  TS_CHECK(used_ > 0, "StepTimeline::mark(\"{}\") before begin()", label);
  record_next();
  labels_.emplace_back(label);
}

void StepTimeline::finish() {
  TS_CHECK(used_ > 0, "StepTimeline::finish() before begin()");
  device_.synchronize(stream_);
  for (size_t i = 0; i < labels_.size(); ++i) {
    const double ms = device_.elapsed_ms(events_[i], events_[i + 1]);
    auto it = std::find_if(totals_.begin(), totals_.end(),
                           [&](const auto& t) { return t.first == labels_[i]; });
    if (it == totals_.end()) {
      totals_.emplace_back(labels_[i], ms);
    } else {
      it->second += ms;
    }
  }
  ++steps_;
  used_ = 0;
  labels_.clear();
}

void StepTimeline::clear() {
  totals_.clear();
  steps_ = 0;
}

}  // namespace tessera::device
