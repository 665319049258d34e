#include "ops/scan_columns.hpp"

#include <bit>
#include <cstring>
#include <limits>

#include "tessera/plugin_abi.h"
#include "tessera/simd_clones.hpp"

namespace tessera::ops {

namespace {

// 8 lanes (GCC / clang vector extensions): one AVX2 register, half an AVX-512 or two SSE ones in
// the other clones. A 16-lane group is two of them. (With 16-lane vectors GCC 12 turned every ?:
// and == of the AVX2 clone into scalar code: 4 MiB of logits scanned at ~2.4 GB/s, 3% of a
// 64-row step of the 50m model on a Zen 3.)
using Floats = float __attribute__((vector_size(32)));
using Ints = int32_t __attribute__((vector_size(32)));
using Ints4 = int32_t __attribute__((vector_size(16)));
constexpr int64_t kHalf = 8;
constexpr int64_t kLanes = 2 * kHalf;  // a column group's lanes
// |v| as bits above the largest finite float's: inf or NaN.
constexpr int32_t kAbsMask = 0x7fffffff;
constexpr int32_t kMaxFiniteBits = 0x7f7fffff;

// By reference: a 32-byte vector passed by value to or from the SSE2 clone would warn (-Wpsabi).
[[gnu::always_inline]] inline void load(Floats& v, const float* p) { std::memcpy(&v, p, sizeof v); }

// Whether each lane holds an inf or a NaN (|x| above the largest finite float).
[[gnu::always_inline]] inline void mark_non_finite(Ints& bad, const Floats& x) {
  Ints bits;
  std::memcpy(&bits, &x, sizeof bits);
  bad |= (bits & kAbsMask) > kMaxFiniteBits;
}

// Whether any lane is set: halves folded with OR (a few shuffles, no per-lane extraction).
[[gnu::always_inline]] inline bool any_lane(const Ints& m) {
  const Ints4 b =
      __builtin_shufflevector(m, m, 0, 1, 2, 3) | __builtin_shufflevector(m, m, 4, 5, 6, 7);
  return (b[0] | b[1] | b[2] | b[3]) != 0;
}

// The max of v[c0, c1) (NaN-free when *finite) and whether every value is finite; with g (c0 then
// a multiple of the group block), also the max of every column group of those columns into g
// (g[0] is the group of lane 0 of c0's block). A block's 16-column steps are folded lane by lane
// (lanes 0-7 in lo, 8-15 in hi), and lane l of a block holds exactly group l's columns.
TS_SIMD_CLONES float max_and_finite(const float* v, int64_t c0, int64_t c1, float* g,
                                    bool* finite) {
  constexpr int64_t kBlock = TS_LOGIT_GROUP_BLOCK;
  static_assert(TS_LOGIT_GROUP_LANES == kLanes && kBlock % kLanes == 0);
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const Floats none = Floats{} + minus_inf;
  Floats row_lo = none, row_hi = none;
  Ints bad_lanes = {};
  float max = minus_inf;
  int32_t bad = 0;
  for (int64_t b0 = c0; b0 < c1; b0 += kBlock) {
    const int64_t b1 = b0 + kBlock < c1 ? b0 + kBlock : c1;
    Floats lo = none, hi = none;
    int64_t c = b0;
    for (; c + kLanes <= b1; c += kLanes) {
      Floats x, y;
      load(x, v + c);
      load(y, v + c + kHalf);
      lo = x > lo ? x : lo;  // a NaN leaves the max; the finiteness test catches it
      hi = y > hi ? y : hi;
      mark_non_finite(bad_lanes, x);
      mark_non_finite(bad_lanes, y);
    }
    if (g != nullptr) {
      std::memcpy(g, &lo, sizeof lo);
      std::memcpy(g + kHalf, &hi, sizeof hi);
    }
    for (; c < b1; ++c) {  // a partial block's last columns, each into its lane's group
      if (g != nullptr) {
        float& gm = g[c % kLanes];
        gm = v[c] > gm ? v[c] : gm;
      }
      max = v[c] > max ? v[c] : max;
      bad |= static_cast<int32_t>((std::bit_cast<int32_t>(v[c]) & kAbsMask) > kMaxFiniteBits);
    }
    row_lo = lo > row_lo ? lo : row_lo;
    row_hi = hi > row_hi ? hi : row_hi;
    if (g != nullptr) {
      g += kLanes;
    }
  }
  for (int l = 0; l < kHalf; ++l) {
    max = row_lo[l] > max ? row_lo[l] : max;
    max = row_hi[l] > max ? row_hi[l] : max;
    bad |= bad_lanes[l];
  }
  *finite = bad == 0;
  return max;
}

// The first c in [c0, c1) with v[c] == value (-0 == +0); -1 if none.
TS_SIMD_CLONES int64_t first_equal(const float* v, int64_t c0, int64_t c1, float value) {
  int64_t c = c0;
  for (; c + kLanes <= c1; c += kLanes) {
    Floats x, y;
    load(x, v + c);
    load(y, v + c + kHalf);
    if (any_lane((x == value) | (y == value))) {
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

// Asks for the line holding p, written by this core, to move out to the shared L3 (CLDEMOTE, a
// hint; a NOP on CPUs without it). The group maxima are read next by the sampler, half of them on
// the other core, which then finds them in the L3 instead of snooping this core's L2. On the
// 2-vCPU Xeon VM sampling 64 rows takes 67.0 us a step with the hint, 70.0 without (6 interleaved
// pairs).
inline void demote_line(const void* p) {
#if defined(__x86_64__)
  asm volatile("cldemote %0" ::"m"(*static_cast<const char*>(p)));
#endif
}

}  // namespace

void scan_columns(const float* y, int64_t rows, int64_t ldy, int64_t c0, int64_t c1,
                  std::span<RowScan> scans, float* group_max, int64_t ld_group) {
  for (int64_t r = 0; r < rows; ++r) {
    // Two passes over columns still in this core's cache: the max with the finiteness test, then
    // the first column equal to it.
    const float* v = y + r * ldy;
    RowScan& s = scans[static_cast<size_t>(r)];
    bool finite = false;
    float* g = group_max == nullptr
                   ? nullptr
                   : group_max + r * ld_group + c0 / TS_LOGIT_GROUP_BLOCK * TS_LOGIT_GROUP_LANES;
    s.max = max_and_finite(v, c0, c1, g, &finite);
    for (int64_t c = c0; g != nullptr && c < c1; c += TS_LOGIT_GROUP_BLOCK) {
      const float* block = g + (c - c0) / TS_LOGIT_GROUP_BLOCK * TS_LOGIT_GROUP_LANES;
      demote_line(block);
      demote_line(block + TS_LOGIT_GROUP_LANES - 1);  // the same line when 64-byte aligned
    }
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
