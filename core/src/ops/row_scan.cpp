#include "ops/row_scan.hpp"

#include <bit>
#include <cstring>

#include "tessera/simd_clones.hpp"

namespace tessera::ops {

namespace {

// 16 lanes (GCC / clang vector extensions): one AVX-512 register, two AVX2 or four SSE ones in the
// other clones.
using Floats = float __attribute__((vector_size(64)));
using Ints = int32_t __attribute__((vector_size(64)));
constexpr int64_t kLanes = 16;
// |v| as bits above the largest finite float's: inf or NaN.
constexpr int32_t kAbsMask = 0x7fffffff;
constexpr int32_t kMaxFiniteBits = 0x7f7fffff;

Floats load(const float* p) {
  Floats v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

using Ints8 = int32_t __attribute__((vector_size(32)));
using Ints4 = int32_t __attribute__((vector_size(16)));

// Whether any lane is set: halves folded with OR (a few shuffles, no per-lane extraction).
inline bool any_lane(Ints m) {
  const Ints8 a = __builtin_shufflevector(m, m, 0, 1, 2, 3, 4, 5, 6, 7) |
                  __builtin_shufflevector(m, m, 8, 9, 10, 11, 12, 13, 14, 15);
  const Ints4 b =
      __builtin_shufflevector(a, a, 0, 1, 2, 3) | __builtin_shufflevector(a, a, 4, 5, 6, 7);
  return (b[0] | b[1] | b[2] | b[3]) != 0;
}

// The max of v[c0, c1) (NaN-free when *finite), and whether every value is finite.
TS_SIMD_CLONES float max_and_finite(const float* v, int64_t c0, int64_t c1, bool* finite) {
  float max = v[c0];
  int32_t bad = 0;
  int64_t c = c0;
  if (c1 - c0 >= kLanes) {
    Floats m = load(v + c0);
    Ints bad_lanes = {};
    for (; c + kLanes <= c1; c += kLanes) {
      const Floats x = load(v + c);
      m = x > m ? x : m;  // MAXPS: a NaN x leaves m, the finiteness test catches it
      bad_lanes |= (std::bit_cast<Ints>(x) & kAbsMask) > kMaxFiniteBits;
    }
    for (int l = 0; l < kLanes; ++l) {
      max = m[l] > max ? m[l] : max;
      bad |= bad_lanes[l];
    }
  }
  for (; c < c1; ++c) {
    max = v[c] > max ? v[c] : max;
    bad |= static_cast<int32_t>((std::bit_cast<int32_t>(v[c]) & kAbsMask) > kMaxFiniteBits);
  }
  *finite = bad == 0;
  return max;
}

// The first c in [c0, c1) with v[c] == value (-0 == +0); -1 if none.
TS_SIMD_CLONES int64_t first_equal(const float* v, int64_t c0, int64_t c1, float value) {
  int64_t c = c0;
  for (; c + kLanes <= c1; c += kLanes) {
    if (any_lane(load(v + c) == value)) {
      break;  // the lane is found by the scalar loop below
    }
  }
  for (; c < c1; ++c) {
    if (v[c] == value) {
      return c;
    }
  }
  return -1;
}

}  // namespace

void scan_columns(const float* y, int64_t rows, int64_t ldy, int64_t c0, int64_t c1,
                  std::span<RowScan> scans) {
  for (int64_t r = 0; r < rows; ++r) {
    // Two passes over columns still in this core's cache: the max with the finiteness test, then
    // the first column equal to it.
    const float* v = y + r * ldy;
    RowScan& s = scans[static_cast<size_t>(r)];
    bool finite = false;
    s.max = max_and_finite(v, c0, c1, &finite);
    s.finite = finite;
    s.argmax = finite ? static_cast<int32_t>(first_equal(v, c0, c1, s.max)) : -1;
  }
}

void merge_scan(RowScan& into, const RowScan& later) {
  if (!later.finite || !into.finite) {
    into.finite = false;
    return;
  }
  if (later.max > into.max) {
    into.max = later.max;
    into.argmax = later.argmax;
  }
}

}  // namespace tessera::ops
