// Encoding and decoding of one lightning-indexer key (README.md, "Indexer keys"), as sglang's
// fused_store_indexer_cache does it: one plain fp32 scale per key (not a power of two),
//   scale = max(amax, 1e-4) / 448,  code = e4m3(x * (1 / scale)),  decoded = e4m3 value * scale,
// every product and quotient rounded to fp32. The caller has checked that the row is finite.
#pragma once

#include <cstdint>

namespace tessera::kvfp8 {

float indexer_scale(float amax);

// row [dim] -> entry `entry` of an indexer page ([entries x dim fp8][entries x fp32 scale]).
void encode_indexer_key(int64_t dim, int64_t entries_per_page, const float* row, int64_t entry,
                        uint8_t* page);
void decode_indexer_key(int64_t dim, int64_t entries_per_page, const uint8_t* page, int64_t entry,
                        float* row);

}  // namespace tessera::kvfp8
