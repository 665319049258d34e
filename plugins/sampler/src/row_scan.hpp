// One vectorised pass over a row of logits: its largest value and whether every value is finite
// (the validation the row needs anyway), and the argmax with the lowest id among equal maxima.
#pragma once

#include <cstdint>
#include <span>

namespace tessera::sampler {

// A row's largest value and whether every value of it is finite. (The core's ops::RowScan, handed
// over as ts_row_scan, also carries the argmax.)
struct RowMaxFinite {
  float max = 0.0f;         // meaningful only when all_finite (or when -inf marks removed tokens)
  bool all_finite = false;  // no NaN, no +-inf
};

[[nodiscard]] RowMaxFinite scan_row(std::span<const float> logits);

// The lowest index whose value == value (so -0 and +0 are equal, as std::max_element compares);
// -1 if none.
[[nodiscard]] int32_t first_index_of(std::span<const float> values, float value);

// The portable versions (GCC vector extensions, one clone per x86-64 level) that the two above
// run on CPUs without AVX-512; tests compare both.
[[nodiscard]] RowMaxFinite scan_row_portable(std::span<const float> logits);
[[nodiscard]] int32_t first_index_of_portable(std::span<const float> values, float value);

}  // namespace tessera::sampler
