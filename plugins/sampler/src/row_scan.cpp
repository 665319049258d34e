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

}  // namespace

TS_SAMPLER_CLONES RowScan scan_row(std::span<const float> logits) {
  const float* v = logits.data();
  const size_t n = logits.size();
  const float minus_inf = -std::numeric_limits<float>::infinity();
  Floats lanes = {};
  lanes += minus_inf;
  Ints bad = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Floats x;
    std::memcpy(&x, v + i, sizeof x);
    lanes = lanes > x ? lanes : x;
    Ints bits;
    std::memcpy(&bits, &x, sizeof bits);
    bad |= (bits & kExponentMask) == kExponentMask;  // -1 where inf or NaN
  }
  float max = minus_inf;
  bool any_bad = false;
  for (size_t j = 0; j < kLanes; ++j) {
    max = max > lanes[j] ? max : lanes[j];
    any_bad = any_bad || bad[j] != 0;
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
  // Blocks of 8: a vector "any equal" test, then the exact position inside the hit block.
  for (; i + kLanes <= n; i += kLanes) {
    Floats x;
    std::memcpy(&x, v + i, sizeof x);
    const Ints eq = x == value;
    bool hit = false;
    for (size_t j = 0; j < kLanes; ++j) hit = hit || eq[j] != 0;
    if (hit) break;
  }
  for (; i < n; ++i) {
    if (v[i] == value) return static_cast<int32_t>(i);
  }
  return -1;
}

}  // namespace tessera::sampler
