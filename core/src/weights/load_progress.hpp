// A one-line progress bar on stderr for long loads, drawn only when stderr is a terminal (logs
// and CI output stay clean). Redraws at most every 100 ms; thread-compatible, not thread-safe
// (one thread calls update()).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tessera::weights {

class LoadProgress {
 public:
  LoadProgress(std::string label, uint64_t total_bytes);
  ~LoadProgress();
  LoadProgress(const LoadProgress&) = delete;
  LoadProgress& operator=(const LoadProgress&) = delete;

  void update(uint64_t done_bytes);
  void finish();   // draws 100% and ends the line (also done by the destructor)
  void abandon();  // ends the line where it stands (loading failed)
  [[nodiscard]] bool enabled() const { return enabled_; }

 private:
  void draw(uint64_t done_bytes);

  std::string label_;
  uint64_t total_;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace tessera::weights
