// Encoding and decoding of one main latent entry (README.md, "Main entries"):
//   nope channels: per group of 64, scale = 2^ceil(log2(max(amax / 448, 1e-4))) (FlashMLA
//     tests/quant.py), stored as its UE8M0 exponent; each value is e4m3(x / scale).
//   rope channels: bf16.
// The caller has checked that the row is finite.
#pragma once

#include <cstdint>

#include "fp8_layout.hpp"

namespace tessera::kvfp8 {

// The scale exponent of a group whose largest |x| is amax: max(-13, ceil(log2(amax / 448)))
// with amax / 448 computed in fp32. -13 is ceil(log2(1e-4)), the floor FlashMLA applies.
int group_scale_exponent(float amax);

// row [dim] -> entry `entry` of `page`. Writes the record, the scale bytes and the pad byte (0).
void encode_latent(const LatentGeometry& g, int64_t entries_per_page, const float* row,
                   int64_t entry, uint8_t* page);

// entry `entry` of `page` -> row [dim].
void decode_latent(const LatentGeometry& g, int64_t entries_per_page, const uint8_t* page,
                   int64_t entry, float* row);

}  // namespace tessera::kvfp8
