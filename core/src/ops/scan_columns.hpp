// The CPU's row scans (ops/row_scan.hpp) of a block of logits, and the merge of the scans of a
// row's column blocks; the vocabulary head (ops::linear_scanned) calls them on each block it
// writes.
#pragma once

#include <cstdint>
#include <span>

#include "ops/row_scan.hpp"

namespace tessera::ops {

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
