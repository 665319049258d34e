// What a greedy sampler needs of a row of logits, found while the logits are still in the cache of
// the core that wrote them (ops::linear_scanned, the vocabulary head): the largest value, the
// lowest column holding it, and whether the row has no NaN or infinity (and, when asked, the max of
// each column group). Handed to the sampler plugin as ts_row_scan / ts_row_groups (plugin_abi.h),
// it saves the sampler's own pass over [rows, vocab] floats from memory (docs/perf.md "Engine").
#pragma once

#include <cstdint>
#include <span>

namespace tessera::ops {

struct RowScan {
  float max = 0.0f;
  int32_t argmax = -1;  // lowest column holding max; -1 when not finite
  bool finite = true;   // no NaN / inf in the columns seen (max and argmax mean nothing if not)
};

// scans[r] = the scan of columns [c0, c1) of row r of y (rows ldy apart); c1 > c0.
// With group_max (rows ld_group apart; c0 a multiple of TS_LOGIT_GROUP_BLOCK): also the largest
// value of each column group (plugin_abi.h TS_LOGIT_GROUP_*) of those columns' blocks, written at
// the groups' own indices (-inf for a partial block's empty groups): what the sampler's rejection
// draw bounds its proposals with.
void scan_columns(const float* y, int64_t rows, int64_t ldy, int64_t c0, int64_t c1,
                  std::span<RowScan> scans, float* group_max = nullptr, int64_t ld_group = 0);

// Folds the scan of later columns into `into`, a scan of earlier columns of the same row: the
// larger max wins, a tie keeps the earlier (lower) column.
void merge_scan(RowScan& into, const RowScan& later);

}  // namespace tessera::ops
