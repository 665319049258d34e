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
  HostArray<float> values;          // [rows, vocab], every value written by forward()
  std::vector<int64_t> chunk_rows;  // first logits row of each chunk
  // [rows] each row's max, argmax and finiteness, found by the vocabulary head as it wrote them
  // (one rank); empty when not (tensor parallel: the rows are gathered from shards).
  HostArray<ops::RowScan> scans;
  // [rows, TS_LOGIT_GROUP_COUNT(vocab)] each row's column-group maxima, found with scans.
  HostArray<float> group_max;
  const float* row(int64_t r) const { return values.data() + r * vocab; }
};

}  // namespace tessera::dsv4
