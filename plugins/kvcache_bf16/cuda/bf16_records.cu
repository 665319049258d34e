// The bf16 cache's records on the device: the same encoding as the plugin's CPU path
// (kvcache_bf16.cpp), value for value: fp32 -> bf16 with round-to-nearest-even on the dropped 16
// bits (finite inputs), or the fp32 bits unchanged for storage = "fp32"; decoding widens exactly.
#include "bf16_records.hpp"
#include "device_primitives.cuh"
#include "launch_slots.cuh"
#include "row_check.cuh"

namespace tessera::kvbf16 {
namespace {

using namespace dev;

constexpr int kThreads = 128;

// The record of `slot`: page slot / entries_per_page, entry slot % entries_per_page.
TS_DEVICE int64_t record_offset(const ts_bf16_records& r, int64_t slot) {
  return slot / r.entries_per_page * static_cast<int64_t>(r.page_bytes) +
         static_cast<int64_t>(r.record_offset) +
         slot % r.entries_per_page * static_cast<int64_t>(r.record_stride);
}

TS_DEVICE uint16_t nearest_even_bf16(float v) {
  const uint32_t bits = float_bits(v);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// rows [n, dim] fp32 -> records; one block per row (blockIdx.x = i < n). A row holding a
// non-finite value is not written; row0 + i is min-reduced into *first_bad (when not null). A
// row whose slot is negative (padding, slots in device memory) is skipped.
TS_KERNEL(kThreads)
store_records(ts_bf16_records r, const float* rows, SlotChunk slots, uint8_t* pool,
              int64_t* first_bad, int64_t row0) {
  const int i = block_index();
  const int64_t slot = cuda_module::slot_at(slots, i);
  if (slot < 0) return;
  const float* src = rows + i * r.dim;
  if (!cuda_module::block_row_finite(src, r.dim, kThreads, reinterpret_cast<int*>(dynamic_smem()),
                                     first_bad, row0 + i))
    return;
  uint8_t* dst = pool + record_offset(r, slot);
  if (r.value_bytes == 4) {
    auto* out = reinterpret_cast<float*>(dst);
    for (int64_t c = thread_index(); c < r.dim; c += kThreads) out[c] = src[c];
  } else {
    auto* out = reinterpret_cast<uint16_t*>(dst);
    for (int64_t c = thread_index(); c < r.dim; c += kThreads) out[c] = nearest_even_bf16(src[c]);
  }
}

// records -> rows [n, dim] fp32; one block per row.
TS_KERNEL(kThreads)
load_records(ts_bf16_records r, const uint8_t* pool, SlotChunk slots, float* rows) {
  const int i = block_index();
  const uint8_t* src = pool + record_offset(r, cuda_module::slot_at(slots, i));
  float* dst = rows + i * r.dim;
  if (r.value_bytes == 4) {
    const auto* in = reinterpret_cast<const float*>(src);
    for (int64_t c = thread_index(); c < r.dim; c += kThreads) dst[c] = in[c];
  } else {
    const auto* in = reinterpret_cast<const uint16_t*>(src);
    for (int64_t c = thread_index(); c < r.dim; c += kThreads) dst[c] = bf16_to_float(in[c]);
  }
}

}  // namespace

cudaError_t launch_store_records(const ts_bf16_records& records, const float* rows,
                                 const SlotChunk& slots, int n, uint8_t* pool, cudaStream_t stream,
                                 int64_t* first_bad, int64_t row0) {
  if (n <= 0) return cudaSuccess;
  TS_LAUNCH(store_records, dim3(static_cast<unsigned>(n)), dim3(kThreads), sizeof(int), stream,
            records, rows, slots, pool, first_bad, row0);
  return cudaGetLastError();
}

cudaError_t launch_load_records(const ts_bf16_records& records, const uint8_t* pool,
                                const SlotChunk& slots, int n, float* rows, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  TS_LAUNCH(load_records, dim3(static_cast<unsigned>(n)), dim3(kThreads), 0, stream, records, pool,
            slots, rows);
  return cudaGetLastError();
}

}  // namespace tessera::kvbf16
