// The CPU side of a kv format's store_device_slots (ABI 1.6): on a CPU device the slots are in
// host memory, and a negative slot marks a padding row that is neither written nor checked. The
// rows with a slot go to the format's own store.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/plugin_abi.h"

namespace tessera::sdk {

// store(rows, n, slots) over the rows [n, dim] whose slot is >= 0, in order (host memory).
template <class Store>
ts_status store_rows_with_slots(const float* rows, int64_t n, int64_t dim, const int64_t* slots,
                                Store store) {
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    kept += slots[i] >= 0 ? 1 : 0;
  }
  if (kept == n) {
    return store(rows, n, slots);
  }
  std::vector<float> kept_rows;
  std::vector<int64_t> kept_slots;
  kept_rows.reserve(static_cast<size_t>(kept * dim));
  kept_slots.reserve(static_cast<size_t>(kept));
  for (int64_t i = 0; i < n; ++i) {
    if (slots[i] < 0) {
      continue;
    }
    kept_rows.insert(kept_rows.end(), rows + i * dim, rows + (i + 1) * dim);
    kept_slots.push_back(slots[i]);
  }
  return store(kept_rows.data(), kept, kept_slots.data());
}

}  // namespace tessera::sdk
