// The finiteness check of a kv format's store kernels on a CUDA device (ts_kv_cache_table's
// store_async): every thread of the block (or warp) learns whether the row it encodes holds only
// finite values, so that a non-finite row is left unwritten; its index goes to the host through
// a min-reduced device word. Included by the formats' kernel sources (nvcc or the SIMT emulator's
// C++ build), after device_primitives.cuh.
#pragma once

#include <cstdint>

namespace tessera::cuda_module {

TS_DEVICE bool finite_value(float v) {
  return (tessera::dev::float_bits(v) & 0x7F800000u) != 0x7F800000u;
}

// Block-wide: row[0, dim) read by `threads` threads; `flag` is one int of shared memory. A
// non-finite row's index is min-reduced into *first_bad (when not null) by thread 0.
TS_DEVICE bool block_row_finite(const float* row, int64_t dim, int threads, int* flag,
                                int64_t* first_bad, int64_t row_index) {
  using namespace tessera::dev;
  if (thread_index() == 0) *flag = 0;
  sync_block();
  bool bad = false;
  for (int64_t c = thread_index(); c < dim; c += threads) bad = bad || !finite_value(row[c]);
  if (bad) *flag = 1;  // every writer writes the same value
  sync_block();
  const bool finite = *flag == 0;
  if (!finite && thread_index() == 0 && first_bad != nullptr) atomic_min_i64(first_bad, row_index);
  return finite;
}

// Warp-wide (a block of one warp): as block_row_finite, agreed by a ballot.
TS_DEVICE bool warp_row_finite(const float* row, int64_t dim, int lanes, int64_t* first_bad,
                               int64_t row_index) {
  using namespace tessera::dev;
  bool bad = false;
  for (int64_t c = thread_index(); c < dim; c += lanes) bad = bad || !finite_value(row[c]);
  const bool finite = ballot(bad) == 0;
  if (!finite && thread_index() == 0 && first_bad != nullptr) atomic_min_i64(first_bad, row_index);
  return finite;
}

}  // namespace tessera::cuda_module
