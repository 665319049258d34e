// A row's scan (max, all finite) together with the largest logit of each of its column groups
// (plugin_abi.h, TS_LOGIT_GROUP_*): what the rejection draw (rejection_draw.hpp) bounds its
// groups' weights with. The host hands the same maxima over (ts_row_groups, ABI 1.2) when its
// vocabulary head found them; this is the sampler's own pass when it did not.
#pragma once

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

// group_max: [logit_group_count(logits.size())], overwritten (-inf for an empty group). max and
// the group maxima mean nothing when a value is not finite.
RowScan scan_row_groups(std::span<const float> logits, std::span<float> group_max);

}  // namespace tessera::sampler
