// Launchers of the bf16 cache's device kernels (bf16_records.cu): each enqueues on `stream` and
// returns the launch status. Slots travel by value, kSlotsPerLaunch at a time, so the plugin
// needs no device memory of its own for them.
#pragma once

#include <cstdint>

#include "bf16_cuda_api.h"

#ifdef TESSERA_DEVICE_EMULATION
#include "cuda_runtime_emulation.hpp"
#else
#include <cuda_runtime.h>
#endif

namespace tessera::kvbf16 {

inline constexpr int kSlotsPerLaunch = 256;  // 2 KiB of kernel parameters

struct SlotChunk {
  int64_t slot[kSlotsPerLaunch];
};

// rows [n, dim] fp32 -> the records of slots.slot[0..n), n <= kSlotsPerLaunch.
cudaError_t launch_store_records(const ts_bf16_records& records, const float* rows,
                                 const SlotChunk& slots, int n, uint8_t* pool, cudaStream_t stream);
// The records of slots.slot[0..n) -> rows [n, dim] fp32.
cudaError_t launch_load_records(const ts_bf16_records& records, const uint8_t* pool,
                                const SlotChunk& slots, int n, float* rows, cudaStream_t stream);

}  // namespace tessera::kvbf16
