// A row's scan (max, all finite) together with the largest logit of each of its column groups
// (plugin_abi.h, TS_LOGIT_GROUP_*): what the rejection draw (rejection_draw.hpp) bounds its
// groups' weights with. The host hands the same maxima over (ts_row_groups, ABI 1.2) when its
// vocabulary head found them; this is the sampler's own pass when it did not.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "row_scan.hpp"
#include "tessera/plugin_abi.h"

namespace tessera::sampler {

[[nodiscard]] constexpr int64_t logit_group_count(int64_t vocab) {
  return TS_LOGIT_GROUP_COUNT(vocab);
}

// The group of column c (plugin_abi.h).
[[nodiscard]] constexpr int64_t logit_group_of(int64_t c) {
  return (c / TS_LOGIT_GROUP_BLOCK) * TS_LOGIT_GROUP_LANES + c % TS_LOGIT_GROUP_LANES;
}

// Asks for the cache lines of values[0, n) (a hint: nothing is read, nothing can fault), into the
// L1 (Locality 3, PREFETCHT0) or the L2 only (2, PREFETCHT1). The L2 is for many lines asked for
// well ahead (a row's 64 lines of group maxima, two rows before its turn): asked into the L1,
// their requests hold the fill buffers the thread's own loads need (the engine's 64-row sampling:
// 59-65 us a step with them asked into the L2, 63-69 into the L1).
template <int Locality = 3>
inline void prefetch_floats(const float* values, int64_t n) {
  constexpr int64_t kFloatsPerLine = 16;
  for (int64_t i = 0; i < n; i += kFloatsPerLine) {
    __builtin_prefetch(values + i, 0, Locality);
  }
}

// Asks for block b of a row (TS_LOGIT_GROUP_BLOCK columns, fewer at its end): a group's columns
// are one per cache line of its block, so reading one group's weights touches all of them.
inline void prefetch_logit_block(std::span<const float> logits, int64_t b) {
  const auto vocab = static_cast<int64_t>(logits.size());
  const int64_t first = b * TS_LOGIT_GROUP_BLOCK;
  prefetch_floats(logits.data() + first, std::min<int64_t>(TS_LOGIT_GROUP_BLOCK, vocab - first));
}

// group_max: [logit_group_count(logits.size())], overwritten (-inf for an empty group). max and
// the group maxima mean nothing when a value is not finite.
RowMaxFinite scan_row_groups(std::span<const float> logits, std::span<float> group_max);

}  // namespace tessera::sampler
