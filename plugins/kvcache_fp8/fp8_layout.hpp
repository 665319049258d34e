// Page geometry of the FP8 cache, for any dim / rope_dim / entries_per_page (README.md has the
// byte diagrams and the sources).
//
// Main latent entries (FlashMLA "MODEL1", sglang DeepSeekV4SingleKVPool), nope = dim - rope_dim:
//   record  = nope fp8 e4m3 bytes | rope_dim bf16 values (2 B each)      (576 B for 512 / 64)
//   scales  = ceil(nope / 64) UE8M0 bytes + 1 pad byte                    (7 + 1 = 8 B)
//   page    = [records of all entries][scale groups of all entries], rounded up to a multiple of
//             the record size                                              (576 B for Flash)
//   bytes_per_entry = record + scales                                      (584 B)
// Groups are channels [64 g, 64 g + 64) of the nope part; the last group is partial when nope is
// not a multiple of 64 (its scale comes from its own channels only).
//
// Indexer keys (sglang DeepSeekV4IndexerPool, FP8 variant): every channel is fp8 (the indexer key
// keeps its rope channels in the same format), one fp32 scale per key:
//   page = [dim fp8 bytes of all entries][4-byte fp32 scale of all entries], no rounding
//   bytes_per_entry = dim + 4                                              (132 B for 128)
#pragma once

#include <cstdint>
#include <string>

#include "tessera/plugin_abi.h"

namespace tessera::kvfp8 {

inline constexpr int64_t kGroupSize = 64;  // nope channels per UE8M0 scale

struct LatentGeometry {
  int64_t nope = 0, rope = 0, groups = 0;
  int64_t record_bytes = 0;  // nope + 2 * rope
  int64_t scale_bytes = 0;   // groups + 1 (pad)
};

LatentGeometry latent_geometry(int64_t dim, int64_t rope_dim);

// Fills `out` for a stream; returns "" on success, else what is wrong with the arguments.
std::string describe_layout(int32_t stream, int32_t dim, int32_t rope_dim, int32_t entries_per_page,
                            ts_kv_layout& out);

// "" when `layout` is exactly what describe_layout() gives for its own stream / dim / rope_dim /
// entries_per_page, else the first field that differs (a layout of another format, or a
// corrupted one, is refused instead of being misread).
std::string check_layout(const ts_kv_layout& layout);

}  // namespace tessera::kvfp8
