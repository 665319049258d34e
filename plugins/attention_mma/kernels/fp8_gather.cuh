// Reading kvcache_fp8's records into the bf16 tiles the mma kernels multiply (kv_layouts.hpp):
// each 16-byte tile chunk of 8 bf16 values comes from 8 e4m3 codes. For main entries the codes
// are multiplied by their group's UE8M0 scale (a power of two), so the dequantised values are
// exact in bf16 and equal the fp8 cache's decoded rows; indexer keys keep the codes alone and
// their fp32 scale multiplies the key's score (score_k = scale_k * sum_h w_h ReLU(q_h . code_k):
// the scale is positive). Loads are synchronous (no cp.async): the conversion needs registers.
#pragma once

#include "../device_tasks.hpp"
#include "device_primitives.cuh"
#include "number_formats.cuh"

namespace tessera::mma {

// Where the scales of the record at byte `offset` of `pool` are.
TS_DEVICE const unsigned char* record_scales(const uint8_t* pool, int64_t offset,
                                             const RecordFormat& f) {
  const int64_t page = offset / f.page_bytes;
  const int64_t entry = (offset - page * f.page_bytes) / f.record_bytes;
  return pool + page * f.page_bytes + f.scale_offset + entry * f.scale_stride;
}

// 8 e4m3 codes at src (4-byte aligned) times `scale` -> 8 bf16 values at dst (16 bytes, shared).
TS_DEVICE void dequantize_chunk(unsigned char* dst, const unsigned char* src, float scale) {
  const uint32_t lo = *reinterpret_cast<const uint32_t*>(src);
  const uint32_t hi = *reinterpret_cast<const uint32_t*>(src + 4);
  auto value = [scale](uint32_t word, int i) {
    return formats::e4m3_to_float(static_cast<uint8_t>(word >> (8 * i))) * scale;
  };
  *reinterpret_cast<uint4*>(dst) = uint4{
      dev::pack_bf16x2(value(lo, 0), value(lo, 1)), dev::pack_bf16x2(value(lo, 2), value(lo, 3)),
      dev::pack_bf16x2(value(hi, 0), value(hi, 1)), dev::pack_bf16x2(value(hi, 2), value(hi, 3))};
}

}  // namespace tessera::mma
