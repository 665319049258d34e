// Launchers of the fp8 cache's device kernels (fp8_records.cu): each enqueues on `stream` and
// returns the launch status. Slots travel by value (cuda_slot_chunks.hpp).
#pragma once

#include <cstdint>

#include "cuda_slot_chunks.hpp"
#include "fp8_cuda_api.h"

namespace tessera::kvfp8 {

using cuda_module::SlotChunk;

// rows [n, dim] fp32 -> the entries of the slots (slot_at: by value, n <= kSlotsPerLaunch, or in
// device memory, where a negative slot is a padding row, skipped). A row holding a
// non-finite value is left unwritten and row0 + its index min-reduced into *first_bad (device
// memory; null: the rows are known finite).
cudaError_t launch_store_entries(const ts_fp8_records& records, const float* rows,
                                 const SlotChunk& slots, int n, uint8_t* pool, cudaStream_t stream,
                                 int64_t* first_bad, int64_t row0);
// The entries of slots.slot[0..n) -> rows [n, dim] fp32.
cudaError_t launch_load_entries(const ts_fp8_records& records, const uint8_t* pool,
                                const SlotChunk& slots, int n, float* rows, cudaStream_t stream);

}  // namespace tessera::kvfp8
