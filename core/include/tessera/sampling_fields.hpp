// The sampling fields of a generation request, one row each: name, range and what absence means.
// The HTTP frontend, the gRPC frontend and the engine's request reader all check against these
// rows, so one value is refused or accepted the same way whichever way it came in.
//
// | field              | type    | range          | absent                     |
// |--------------------|---------|----------------|----------------------------|
// | temperature        | number  | [0, 2]         | [sampler.defaults]         |
// | top_p              | number  | (0, 1]         | [sampler.defaults]         |
// | top_k              | integer | [-1, vocab]    | [sampler.defaults]; -1, 0 off |
// | min_p              | number  | [0, 1]         | [sampler.defaults]         |
// | frequency_penalty  | number  | [-2, 2]        | [sampler.defaults]         |
// | presence_penalty   | number  | [-2, 2]        | [sampler.defaults]         |
// | repetition_penalty | number  | (0, 10]        | [sampler.defaults]         |
// | stop               | strings | <= kMaxStopBytes bytes each | none          |
// NaN and infinities are outside every range.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::sdk {

struct NumberField {
  std::string_view name;
  double lo;
  double hi;
  bool lo_open;  // lo itself is outside the range
};

inline constexpr NumberField kTemperature{"temperature", 0, 2, false};
inline constexpr NumberField kTopP{"top_p", 0, 1, true};
inline constexpr NumberField kMinP{"min_p", 0, 1, false};
inline constexpr NumberField kFrequencyPenalty{"frequency_penalty", -2, 2, false};
inline constexpr NumberField kPresencePenalty{"presence_penalty", -2, 2, false};
inline constexpr NumberField kRepetitionPenalty{"repetition_penalty", 0, 10, true};

inline constexpr std::array kSamplingNumberFields = {
    kTemperature, kTopP, kMinP, kFrequencyPenalty, kPresencePenalty, kRepetitionPenalty};

// top_k: -1 and 0 both mean "no top-k" (OpenAI-style clients send -1, the engine takes 0); any
// lower value is refused. The upper bound is the vocabulary size.
inline constexpr std::int64_t kTopKOff = -1;
// Bytes per stop string (the count is a frontend option, `max_stop`).
inline constexpr std::size_t kMaxStopBytes = 256;

[[nodiscard]] inline bool in_range(const NumberField& f, double x) noexcept {
  return std::isfinite(x) && (f.lo_open ? x > f.lo : x >= f.lo) && x <= f.hi;
}

// "[0, 2]" or "(0, 1]", for messages.
[[nodiscard]] inline std::string range_text(const NumberField& f) {
  const auto number = [](double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  return (f.lo_open ? "(" : "[") + number(f.lo) + ", " + number(f.hi) + "]";
}

}  // namespace tessera::sdk
