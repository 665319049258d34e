// Stop strings over streamed text: finds a stop string even when it is spelled across several
// tokens, and never lets any part of it reach the output. Text that could still be the beginning
// of a stop string (a suffix equal to a stop string's prefix) is held back until the next piece
// decides it; when the sequence ends for another reason, flush() releases it.
// One per sequence; not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::engine {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops = {});

  struct Result {
    std::string text;               // safe to emit now
    std::optional<size_t> matched;  // index of the stop string found (text ends before it)
  };
  // Appends a piece of text (complete UTF-8). After a match the matcher must not be fed again.
  Result push(std::string_view piece);
  // The held-back tail (the sequence ended without a match).
  std::string flush();

  size_t held_bytes() const { return held_.size(); }
  bool empty() const { return stops_.empty(); }

 private:
  std::vector<std::string> stops_;
  std::string held_;
};

}  // namespace tessera::engine
