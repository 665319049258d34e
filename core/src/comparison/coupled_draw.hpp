// A/B arms sample with the coupled draw of the standard sampler (draw = "race", docs/sampler.md
// "Coupled draw"): its randomness is a function of (seed, position, token id), so two arms whose
// logits differ a little pick the same token unless their distributions really differ there, and
// a free-running comparison measures the arms rather than the sampler (docs/ab.md "Coupling").
// `tessera ab` and the arms of a live A/B (`[ab]` in serve) use it unless the configuration names
// a draw itself.
#pragma once

#include <string>

namespace tessera::ab {

// The sampler draw A/B arms use when their configuration names none.
inline constexpr const char* kCoupledDraw = "race";

// options_json with "draw": kCoupledDraw added when plugin is "standard" and options_json (a JSON
// object, or empty) has no "draw" key; otherwise unchanged.
[[nodiscard]] std::string with_coupled_draw(const std::string& plugin,
                                            const std::string& options_json);

}  // namespace tessera::ab
