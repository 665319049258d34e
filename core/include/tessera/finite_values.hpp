// Header-only checks for plugins that take floats from the host (kv rows, logits): whether all
// are finite, in one branch-free pass the compiler vectorises, and which one is not, looked for
// only when one is not. A per-value std::isfinite with an early return stays scalar: ~20 us of
// the bf16 cache's store in every 64-sequence layer against ~15 (docs/perf.md "The bf16 store's
// finite check").
#pragma once

#include <cstdint>
#include <cstring>

namespace tessera::sdk {

// Whether x is an inf or a NaN: its exponent bits all ones (no branch, no <cmath> call).
[[nodiscard]] inline bool is_inf_or_nan(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return (bits & 0x7F800000u) == 0x7F800000u;
}

// Whether every value of values[0, n) is finite (its exponent not all ones). No early return, so
// the loop vectorises; call it from a TS_SIMD_CLONES function (tessera/simd_clones.hpp) to have it
// compiled for the widest vectors the CPU has.
[[nodiscard]] inline bool all_finite(const float* values, int64_t n) {
  uint32_t inf_or_nan = 0;
  for (int64_t i = 0; i < n; ++i) {
    inf_or_nan |= static_cast<uint32_t>(is_inf_or_nan(values[i]));
  }
  return inf_or_nan == 0;
}

// The index of the first inf or NaN in values[0, n), or -1 when every value is finite.
[[nodiscard]] inline int64_t first_non_finite(const float* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (is_inf_or_nan(values[i])) {
      return i;
    }
  }
  return -1;
}

}  // namespace tessera::sdk
