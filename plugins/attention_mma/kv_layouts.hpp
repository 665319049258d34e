// Which kv-cache records the mma kernels read, from the layout a kv-cache plugin describes
// (plugin_abi.h, ts_kv_layout):
//   bf16: one record of `dim` bf16 values per entry (payload then rope part, contiguous), no
//         scales (plugins/kvcache_bf16, storage "bf16");
//   fp8:  plugins/kvcache_fp8's records. Main entries: nope e4m3 bytes then rope bf16 values,
//         UE8M0 scale bytes per 64 nope channels after the page's records; indexer keys: dim
//         e4m3 bytes, one fp32 scale per key after the page's records.
// The gather dequantises fp8 into the same bf16 tiles (e4m3 x 2^k is exact in bf16), so the
// kernels past the gather are the same for both formats.
#pragma once

#include <cstdint>
#include <string>

#include "device_tasks.hpp"
#include "tessera/plugin_abi.h"

namespace tessera::mma {

// "" when the kernels read `layout` for entries of `dim` values, with `format` filled; else why
// not, naming the field (and how to fix the configuration).
std::string read_layout(const ts_kv_layout* layout, int32_t dim, const char* which,
                        RecordFormat& format);

}  // namespace tessera::mma
