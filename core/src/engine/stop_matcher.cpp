#include "engine/stop_matcher.hpp"

#include <algorithm>
#include <utility>

namespace tessera::engine {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

StopMatcher::Result StopMatcher::push(std::string_view piece) {
  Result r;
  if (stops_.empty()) {
    r.text.assign(piece);
    return r;
  }
  std::string buffer = std::move(held_);
  held_.clear();
  buffer.append(piece);
  // The earliest occurrence wins (ties: the longer stop string, listed first on equal length).
  size_t best_at = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t at = buffer.find(stops_[i]);
    if (at == std::string::npos) continue;
    if (at < best_at || (at == best_at && stops_[i].size() > stops_[*r.matched].size())) {
      best_at = at;
      r.matched = i;
    }
  }
  if (r.matched) {
    r.text = buffer.substr(0, best_at);
    return r;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& stop : stops_) {
    const size_t longest = std::min(stop.size() - 1, buffer.size());
    for (size_t len = longest; len > hold; --len) {
      if (std::string_view(buffer).substr(buffer.size() - len) ==
          std::string_view(stop).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  held_ = buffer.substr(buffer.size() - hold);
  buffer.resize(buffer.size() - hold);
  r.text = std::move(buffer);
  return r;
}

std::string StopMatcher::flush() { return std::exchange(held_, {}); }

}  // namespace tessera::engine
