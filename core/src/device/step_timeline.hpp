// Where a device step's time goes: labelled intervals between timing events recorded on one
// stream (tessera bench device). begin() opens a step, mark(label) closes the interval since the
// previous mark (or begin) under `label`, finish() waits for the stream and adds each interval's
// milliseconds to its label's total. Labels repeat (one per layer and block); totals keep the
// order labels were first seen. Events are created once and reused by later steps.
//
// On a GPU an interval is device time between two points of the stream, including any time the
// stream waited for the host in between (the host's part of the block it closes).
// Thread-safety: one thread, the one that enqueues the step's work.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "device/device.hpp"

namespace tessera::device {

class StepTimeline {
 public:
  StepTimeline(Device& device, const Stream& stream) : device_(device), stream_(stream) {}

  void begin();
  void mark(std::string_view label);
  void finish();  // waits for the stream

  [[nodiscard]] const std::vector<std::pair<std::string, double>>& totals_ms() const {
    return totals_;
  }
  [[nodiscard]] int steps() const { return steps_; }
  void clear();  // totals and step count back to zero

 private:
  void record_next();

  Device& device_;
  const Stream& stream_;
  std::vector<Event> events_;
  size_t used_ = 0;                  // events recorded in this step
  std::vector<std::string> labels_;  // interval i: events i -> i + 1
  std::vector<std::pair<std::string, double>> totals_;
  int steps_ = 0;
};

}  // namespace tessera::device
