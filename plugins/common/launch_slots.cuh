// Where a kv format's kernel finds the slot of its row (cuda_slot_chunks.hpp): in the launch's
// chunk of slots passed by value, or in device memory (ABI 1.6 store_device_slots), where a
// negative slot marks a padding row the store skips. Included by the formats' kernel sources
// (nvcc or the SIMT emulator's C++ build), after device_primitives.cuh.
#pragma once

#include <cstdint>

#include "cuda_slot_chunks.hpp"

namespace tessera::cuda_module {

TS_DEVICE int64_t slot_at(const SlotChunk& slots, int row) {
  return slots.device != nullptr ? slots.device[row] : slots.slot[row];
}

}  // namespace tessera::cuda_module
