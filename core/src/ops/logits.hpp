// What one forward step returns: the logits of the rows asked for, and what the vocabulary head
// found of each row as it wrote it (max, argmax, finiteness, column-group maxima) so the sampler
// need not read the row again to find them (plugins/sampler_call.hpp hands them over).
//
// A device forward returns them in one block of its device's page-locked host memory, which goes
// back to the model's pool when the Logits go (device/host_block_pool.hpp); they may outlive the
// model and the device. Copies are deep.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/row_scan.hpp"
#include "util/host_array.hpp"

namespace tessera::dsv4 {

struct Logits {
  int64_t vocab = 0;
  // [rows with values, vocab]: every row's values (value_row empty), or those of the rows
  // value_row places; every value written by forward().
  HostArray<float> values;
  // [rows] where row r's values are in `values`, or -1 for a row that came back with its scan
  // only (a scan-only chunk's, from a device forward); empty: row r is values' row r.
  std::vector<int64_t> value_row;
  std::vector<int64_t> chunk_rows;  // first logits row of each chunk
  // [rows] each row's max, argmax and finiteness, found by the vocabulary head as it wrote them
  // (one rank); empty when not (tensor parallel: the rows are gathered from shards).
  HostArray<ops::RowScan> scans;
  // [rows, TS_LOGIT_GROUP_COUNT(vocab)] each row's column-group maxima, found with scans.
  HostArray<float> group_max;
  // Row r's values, or null when it came back without them.
  const float* row(int64_t r) const {
    if (value_row.empty()) {
      return values.data() + r * vocab;
    }
    const int64_t at = value_row[static_cast<size_t>(r)];
    return at < 0 ? nullptr : values.data() + at * vocab;
  }
  // Rows that got logits (with or without values).
  int64_t rows() const {
    if (!value_row.empty()) {
      return static_cast<int64_t>(value_row.size());
    }
    return vocab > 0 ? static_cast<int64_t>(values.size()) / vocab : 0;
  }
};

}  // namespace tessera::dsv4
