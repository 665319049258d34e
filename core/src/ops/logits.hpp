// What one forward step returns: the logits of the rows asked for, and what the vocabulary head
// found of each row as it wrote it (max, argmax, finiteness, column-group maxima) so the sampler
// need not read the row again to find them (plugins/sampler_call.hpp hands them over).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/row_scan.hpp"
#include "util/uninitialized_vector.hpp"

namespace tessera::dsv4 {

struct Logits {
  int64_t vocab = 0;
  UninitializedVector<float> values;  // [rows, vocab], every value written by forward()
  std::vector<int64_t> chunk_rows;    // first logits row of each chunk
  // [rows] each row's max, argmax and finiteness, found by the vocabulary head as it wrote them
  // (one rank); empty when not (tensor parallel: the rows are gathered from shards).
  std::vector<ops::RowScan> scans;
  // [rows, TS_LOGIT_GROUP_COUNT(vocab)] each row's column-group maxima, found with scans.
  std::vector<float> group_max;
  const float* row(int64_t r) const { return values.data() + r * vocab; }
};

}  // namespace tessera::dsv4
