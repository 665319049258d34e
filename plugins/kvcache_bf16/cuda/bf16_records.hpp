// Launchers of the bf16 cache's device kernels (bf16_records.cu): each enqueues on `stream` and
// returns the launch status. Slots travel by value (cuda_slot_chunks.hpp).
#pragma once

#include <cstdint>

#include "bf16_cuda_api.h"
#include "cuda_slot_chunks.hpp"

namespace tessera::kvbf16 {

using cuda_module::SlotChunk;

// rows [n, dim] fp32 -> the records of the slots (slot_at: by value, n <= kSlotsPerLaunch, or in
// device memory, where a negative slot is a padding row, skipped). A row holding a
// non-finite value is left unwritten and row0 + its index min-reduced into *first_bad (device
// memory; null: the rows are known finite).
cudaError_t launch_store_records(const ts_bf16_records& records, const float* rows,
                                 const SlotChunk& slots, int n, uint8_t* pool, cudaStream_t stream,
                                 int64_t* first_bad, int64_t row0);
// The records of slots.slot[0..n) -> rows [n, dim] fp32.
cudaError_t launch_load_records(const ts_bf16_records& records, const uint8_t* pool,
                                const SlotChunk& slots, int n, float* rows, cudaStream_t stream);

}  // namespace tessera::kvbf16
