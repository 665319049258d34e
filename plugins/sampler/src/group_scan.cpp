#include "group_scan.hpp"

#include <bit>
#include <cstring>
#include <limits>

#include "target_clones.hpp"  // TS_SAMPLER_CLONES: one clone per x86-64 level

namespace tessera::sampler {
namespace {

// 8 floats per vector (row_scan.cpp: GCC lowers a 64-byte ?: to scalars); a group's 16 lanes are
// two of them, the even and the odd vectors of a block.
using Floats = float __attribute__((vector_size(32)));
using Ints = int32_t __attribute__((vector_size(32)));
constexpr int64_t kHalf = 8;
constexpr int64_t kLanes = TS_LOGIT_GROUP_LANES;
constexpr int64_t kBlock = TS_LOGIT_GROUP_BLOCK;
static_assert(kLanes == 2 * kHalf && kBlock % kLanes == 0);
constexpr int32_t kExponentMask = 0x7f800000;  // all ones: inf or NaN

// By reference: a vector passed by value to or from the SSE2 clone would warn (-Wpsabi).
[[gnu::always_inline]] inline void load(Floats& x, const float* p) { std::memcpy(&x, p, sizeof x); }

[[gnu::always_inline]] inline bool any_set(const Ints& m) {
  int32_t any = 0;
  for (int64_t l = 0; l < kHalf; ++l) {
    any |= m[l];
  }
  return any != 0;
}

TS_SAMPLER_CLONES RowMaxFinite scan(const float* v, int64_t n, float* group_max) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const Floats none = Floats{} + minus_inf;
  Floats row_lo = none, row_hi = none;
  Ints bad = {};
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c0 = b * kBlock;
    const int64_t c1 = c0 + kBlock < n ? c0 + kBlock : n;
    Floats lo = none, hi = none;  // groups 0-7 and 8-15 of the block
    int64_t c = c0;
    for (; c + kLanes <= c1; c += kLanes) {
      Floats x, y;
      Ints x_bits, y_bits;
      load(x, v + c);
      load(y, v + c + kHalf);
      std::memcpy(&x_bits, &x, sizeof x);
      std::memcpy(&y_bits, &y, sizeof y);
      lo = x > lo ? x : lo;  // a NaN leaves the max; the exponent test below catches it
      hi = y > hi ? y : hi;
      bad |=
          ((x_bits & kExponentMask) == kExponentMask) | ((y_bits & kExponentMask) == kExponentMask);
    }
    float* g = group_max + b * kLanes;
    std::memcpy(g, &lo, sizeof lo);
    std::memcpy(g + kHalf, &hi, sizeof hi);
    for (; c < c1; ++c) {  // a partial block's last columns, each into its lane's group
      const float x = v[c];
      float& m = g[c % kLanes];
      m = x > m ? x : m;
      bad[0] |= static_cast<int32_t>((std::bit_cast<int32_t>(x) & kExponentMask) == kExponentMask);
      row_lo[0] = x > row_lo[0] ? x : row_lo[0];
    }
    row_lo = lo > row_lo ? lo : row_lo;
    row_hi = hi > row_hi ? hi : row_hi;
  }
  float max = minus_inf;
  for (int64_t l = 0; l < kHalf; ++l) {
    max = row_lo[l] > max ? row_lo[l] : max;
    max = row_hi[l] > max ? row_hi[l] : max;
  }
  return {max, !any_set(bad)};
}

}  // namespace

RowMaxFinite scan_row_groups(std::span<const float> logits, std::span<float> group_max) {
  return scan(logits.data(), static_cast<int64_t>(logits.size()), group_max.data());
}

}  // namespace tessera::sampler
