// Counter-based uniform draws: draw number `counter` of the request stream `seed` is a pure
// function of (seed, counter). No state is carried between calls, so the token a row gets never
// depends on the thread that samples it, on the other rows of the batch or on earlier batches.
//
// Construction: SplitMix64 (Steele, Lea & Flood, "Fast Splittable Pseudorandom Number
// Generators", OOPSLA 2014; the finaliser constants are Stafford's "Mix13"). Its n-th output is
// mix64(state0 + n * gamma), so it has random access by construction, the property Philox
// (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC 2011) was designed for. The
// seed is hashed into state0 first so that nearby seeds (0, 1, 2, ...) give unrelated streams.
#pragma once

#include <cstdint>

namespace tessera::sampler {

inline constexpr uint64_t kSplitMixGamma = 0x9E3779B97F4A7C15ULL;  // 2^64 / golden ratio, odd

[[nodiscard]] constexpr uint64_t splitmix64_mix(uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// 64 random bits of draw `counter` in the stream of `seed`.
[[nodiscard]] constexpr uint64_t counter_bits(uint64_t seed, uint64_t counter) noexcept {
  const uint64_t state0 = splitmix64_mix(seed + kSplitMixGamma);
  return splitmix64_mix(state0 + (counter + 1) * kSplitMixGamma);
}

// Uniform double in [0, 1) with 53 random bits (the top bits of the mix are the best ones).
[[nodiscard]] constexpr double counter_uniform(uint64_t seed, uint64_t counter) noexcept {
  return static_cast<double>(counter_bits(seed, counter) >> 11) * 0x1.0p-53;
}

}  // namespace tessera::sampler
