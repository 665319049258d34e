// What a greedy sampler needs of a row of logits, found while the logits are still in the cache of
// the core that wrote them (ops::linear_scanned on CPU, core/cuda/kernels/row_scan.cu on a GPU):
// the largest value, the lowest column holding it, and whether the row has no NaN or infinity.
// Handed to the sampler plugin as ts_row_scan (plugin_abi.h: max and argmax of a finite row), it
// saves the sampler's own pass over [rows, vocab] floats from memory (docs/perf.md "Engine").
//
// A plain struct with no standard-library dependency beyond <cstdint>: the CUDA kernels and the
// emulated device module include this header and write it directly.
#pragma once

#include <cstdint>

namespace tessera::ops {

struct RowScan {
  float max = 0.0f;
  int32_t argmax = -1;  // lowest column holding max; -1 when not finite
  bool finite = true;   // no NaN / inf in the columns seen (max and argmax mean nothing if not)
};

}  // namespace tessera::ops
