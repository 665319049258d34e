#include "weights/load_progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tessera::weights {

LoadProgress::LoadProgress(std::string label, uint64_t total_bytes)
    : label_(std::move(label)),
      total_(total_bytes),
      enabled_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

LoadProgress::~LoadProgress() { finish(); }

void LoadProgress::update(uint64_t done_bytes) {
  if (!enabled_ || finished_) {
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) {
    return;
  }
  last_draw_ = now;
  draw(done_bytes);
}

void LoadProgress::finish() {
  if (!enabled_ || finished_) {
    return;
  }
  finished_ = true;
  draw(total_);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

void LoadProgress::abandon() {
  if (!enabled_ || finished_) {
    return;
  }
  finished_ = true;
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

void LoadProgress::draw(uint64_t done_bytes) {
  constexpr int kWidth = 30;
  const double fraction =
      total_ == 0 ? 1.0
                  : std::min(1.0, static_cast<double>(done_bytes) / static_cast<double>(total_));
  const int filled = static_cast<int>(fraction * kWidth);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const std::string bar = std::string(static_cast<size_t>(filled), '#') +
                          std::string(static_cast<size_t>(kWidth - filled), '.');
  fmt::print(stderr, "\r{} [{}] {:3.0f}%  {:.2f}/{:.2f} GiB  {:.2f} GiB/s ", label_, bar,
             fraction * 100.0, static_cast<double>(done_bytes) / gib,
             static_cast<double>(total_) / gib,
             seconds > 0 ? static_cast<double>(done_bytes) / gib / seconds : 0.0);
  std::fflush(stderr);
}

}  // namespace tessera::weights
