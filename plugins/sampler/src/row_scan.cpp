#include "row_scan.hpp"

#include <bit>
#include <cstring>
#include <limits>

#include "target_clones.hpp"  // TS_SAMPLER_CLONES: one clone per x86-64 level

namespace tessera::sampler {
namespace {

// GCC/clang vector extensions: 8 floats, split into whatever registers the clone's target has
// (GCC 12 lowers a 64-byte ?: to scalars even with AVX-512, so 32 bytes it is).
using Floats = float __attribute__((vector_size(32)));
using Ints = int32_t __attribute__((vector_size(32)));
constexpr size_t kLanes = 8;
constexpr int32_t kExponentMask = 0x7f800000;  // all ones: inf or NaN

bool is_bad(float x) { return (std::bit_cast<int32_t>(x) & kExponentMask) == kExponentMask; }

// Blocks of kUnroll vectors: independent accumulators, so no iteration waits for the previous
// one's max (the result is the same in any order: max and "any bad" are exact).
constexpr size_t kUnroll = 4;
constexpr size_t kStep = kLanes * kUnroll;

[[gnu::always_inline]] inline Floats load(const float* p) {
  Floats x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

[[gnu::always_inline]] inline bool any_set(Ints m) {
  uint64_t parts[sizeof m / sizeof(uint64_t)];
  std::memcpy(parts, &m, sizeof m);
  uint64_t any = 0;
  for (const uint64_t p : parts) {
    any |= p;
  }
  return any != 0;
}

}  // namespace

TS_SAMPLER_CLONES RowScan scan_row(std::span<const float> logits) {
  const float* v = logits.data();
  const size_t n = logits.size();
  const float minus_inf = -std::numeric_limits<float>::infinity();
  Floats lanes[kUnroll];
  Ints bad[kUnroll];
  for (size_t u = 0; u < kUnroll; ++u) {
    lanes[u] = Floats{} + minus_inf;
    bad[u] = Ints{};
  }
  size_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    for (size_t u = 0; u < kUnroll; ++u) {
      const Floats x = load(v + i + u * kLanes);
      lanes[u] = lanes[u] > x ? lanes[u] : x;
      Ints bits;
      std::memcpy(&bits, &x, sizeof bits);
      bad[u] |= (bits & kExponentMask) == kExponentMask;  // -1 where inf or NaN
    }
  }
  float max = minus_inf;
  bool any_bad = false;
  for (size_t u = 0; u < kUnroll; ++u) {
    for (size_t j = 0; j < kLanes; ++j) {
      max = max > lanes[u][j] ? max : lanes[u][j];
    }
    any_bad = any_bad || any_set(bad[u]);
  }
  for (; i < n; ++i) {
    max = max > v[i] ? max : v[i];
    any_bad = any_bad || is_bad(v[i]);
  }
  return RowScan{max, !any_bad};
}

TS_SAMPLER_CLONES int32_t first_index_of(std::span<const float> values, float value) {
  const float* v = values.data();
  const size_t n = values.size();
  size_t i = 0;
  // Blocks of kStep: one vector "any equal" test, then the exact position inside the hit block.
  for (; i + kStep <= n; i += kStep) {
    Ints eq = load(v + i) == value;
    for (size_t u = 1; u < kUnroll; ++u) {
      eq |= load(v + i + u * kLanes) == value;
    }
    if (any_set(eq)) {
      break;
    }
  }
  for (; i < n; ++i) {
    if (v[i] == value) {
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

}  // namespace tessera::sampler
