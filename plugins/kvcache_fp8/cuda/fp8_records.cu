// The fp8 cache's entries on the device: the same encoding as the plugin's CPU path
// (latent_codec.cpp, indexer_codec.cpp), byte for byte, and the same decoding, bit for bit.
//   Main: per group of 64 nope channels, exponent = max(-13, ceil(log2(amax / 448))) with
//     amax / 448 in fp32; code = e4m3(x * 2^-exponent) (exact product: x / 2^exponent is what
//     the CPU path rounds); rope channels bf16 (nearest even); the pad byte 0.
//   Indexer: scale = max(amax, 1e-4) / 448, code = e4m3(x * (1 / scale)), both in fp32, as
//     sglang's store kernel computes them; the scale stored as fp32.
// Pages are byte arrays: multi-byte values are written and read byte by byte, little-endian.
#include "device_primitives.cuh"
#include "fp8_records.hpp"
#include "launch_slots.cuh"
#include "number_formats.cuh"
#include "row_check.cuh"

namespace tessera::kvfp8 {
namespace {

using namespace dev;
namespace fmt = tessera::formats;

constexpr int kWarp = 32;
constexpr int kMainThreads = 256;  // one warp per scale group, 8 groups at a time
constexpr int kGroupSize = 64;
constexpr int kMinScaleExponent = -13;  // ceil(log2(1e-4)), FlashMLA's floor

struct Geometry {
  int64_t nope, rope, groups, record_bytes, scale_bytes;
};

TS_DEVICE Geometry geometry_of(const ts_fp8_records& r) {
  Geometry g{};
  g.nope = r.dim - r.rope_dim;
  g.rope = r.rope_dim;
  g.groups = (g.nope + kGroupSize - 1) / kGroupSize;
  g.record_bytes = g.nope + 2 * g.rope;
  g.scale_bytes = g.groups + 1;
  return g;
}

TS_DEVICE uint8_t* page_of(const ts_fp8_records& r, uint8_t* pool, int64_t slot) {
  return pool + slot / r.entries_per_page * static_cast<int64_t>(r.page_bytes);
}

TS_DEVICE float magnitude(float v) { return bits_float(float_bits(v) & 0x7FFFFFFFu); }
TS_DEVICE float larger(float a, float b) { return b > a ? b : a; }

// max(-13, ceil(log2(amax / 448))), the quotient in fp32; exact, no log2.
TS_DEVICE int group_scale_exponent(float amax) {
  const float q = amax / 448.0f;
  if (!(q > 0.0f)) return kMinScaleExponent;
  const uint32_t b = float_bits(q);
  const int field = static_cast<int>((b >> 23) & 0xFF);
  if (field == 0) return kMinScaleExponent;  // subnormal: far below 2^-13
  const int e = field - 127 + ((b & 0x7FFFFFu) != 0 ? 1 : 0);
  return e > kMinScaleExponent ? e : kMinScaleExponent;
}

// 2^k for k in [-126, 127].
TS_DEVICE float power_of_two(int k) { return bits_float(static_cast<uint32_t>(k + 127) << 23); }

TS_DEVICE uint16_t nearest_even_bf16(float v) {
  const uint32_t bits = float_bits(v);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// rows [n, dim] -> main entries; one block per row (blockIdx.x = i < n), warp w encodes the
// groups w, w + 8, ...
TS_KERNEL(kMainThreads)
store_latent(ts_fp8_records r, const float* rows, SlotChunk slots, uint8_t* pool,
             int64_t* first_bad, int64_t row0) {
  const int i = block_index();
  const int64_t slot = cuda_module::slot_at(slots, i);
  if (slot < 0) return;  // a padding row (slots in device memory)
  if (!cuda_module::block_row_finite(rows + i * r.dim, r.dim, kMainThreads,
                                     reinterpret_cast<int*>(dynamic_smem()), first_bad, row0 + i))
    return;
  const Geometry g = geometry_of(r);
  const int64_t entry = slot % r.entries_per_page;
  uint8_t* page = page_of(r, pool, slot);
  uint8_t* record = page + entry * g.record_bytes;
  uint8_t* scales = page + r.entries_per_page * g.record_bytes + entry * g.scale_bytes;
  const float* row = rows + i * r.dim;
  const int lane = thread_index() % kWarp;
  for (int64_t group = thread_index() / kWarp; group < g.groups; group += kMainThreads / kWarp) {
    const int64_t begin = group * kGroupSize;
    const int64_t end = begin + kGroupSize < g.nope ? begin + kGroupSize : g.nope;
    float amax = 0.0f;
    for (int64_t c = begin + lane; c < end; c += kWarp) amax = larger(amax, magnitude(row[c]));
    for (int m = kWarp / 2; m > 0; m >>= 1) amax = larger(amax, shfl_xor(amax, m));
    const int exponent = group_scale_exponent(amax);
    if (lane == 0) scales[group] = static_cast<uint8_t>(exponent + 127);
    const float inverse = power_of_two(-exponent);
    for (int64_t c = begin + lane; c < end; c += kWarp)
      record[c] = fmt::float_to_e4m3(row[c] * inverse);
  }
  if (thread_index() == 0) scales[g.groups] = 0;  // the pad byte
  for (int64_t k = thread_index(); k < g.rope; k += kMainThreads) {
    const uint16_t h = nearest_even_bf16(row[g.nope + k]);
    record[g.nope + 2 * k] = static_cast<uint8_t>(h & 0xFF);
    record[g.nope + 2 * k + 1] = static_cast<uint8_t>(h >> 8);
  }
}

// rows [n, dim] -> indexer keys; one warp per row.
TS_KERNEL(kWarp)
store_indexer(ts_fp8_records r, const float* rows, SlotChunk slots, uint8_t* pool,
              int64_t* first_bad, int64_t row0) {
  const int i = block_index();
  const int64_t slot = cuda_module::slot_at(slots, i);
  if (slot < 0) return;  // a padding row (slots in device memory)
  if (!cuda_module::warp_row_finite(rows + i * r.dim, r.dim, kWarp, first_bad, row0 + i)) return;
  const int64_t entry = slot % r.entries_per_page;
  uint8_t* page = page_of(r, pool, slot);
  const float* row = rows + i * r.dim;
  float amax = 0.0f;
  for (int64_t c = thread_index(); c < r.dim; c += kWarp) amax = larger(amax, magnitude(row[c]));
  for (int m = kWarp / 2; m > 0; m >>= 1) amax = larger(amax, shfl_xor(amax, m));
  const float scale = larger(1e-4f, amax) / 448.0f;
  const float inverse = 1.0f / scale;
  uint8_t* codes = page + entry * r.dim;
  for (int64_t c = thread_index(); c < r.dim; c += kWarp)
    codes[c] = fmt::float_to_e4m3(row[c] * inverse);
  if (thread_index() < 4) {
    const uint32_t bits = float_bits(scale);
    page[r.entries_per_page * r.dim + entry * 4 + thread_index()] =
        static_cast<uint8_t>(bits >> (8 * thread_index()));
  }
}

// main entries -> rows [n, dim]; one block per row.
TS_KERNEL(kMainThreads)
load_latent(ts_fp8_records r, const uint8_t* pool, SlotChunk slots, float* rows) {
  const int i = block_index();
  const Geometry g = geometry_of(r);
  const int64_t slot = cuda_module::slot_at(slots, i);
  const int64_t entry = slot % r.entries_per_page;
  const uint8_t* page = page_of(r, const_cast<uint8_t*>(pool), slot);
  const uint8_t* record = page + entry * g.record_bytes;
  const uint8_t* scales = page + r.entries_per_page * g.record_bytes + entry * g.scale_bytes;
  float* row = rows + i * r.dim;
  for (int64_t c = thread_index(); c < g.nope; c += kMainThreads)
    row[c] = fmt::e4m3_to_float(record[c]) * fmt::ue8m0_to_float(scales[c / kGroupSize]);
  for (int64_t k = thread_index(); k < g.rope; k += kMainThreads) {
    const auto h = static_cast<uint16_t>(record[g.nope + 2 * k] | record[g.nope + 2 * k + 1] << 8);
    row[g.nope + k] = bf16_to_float(h);
  }
}

// indexer keys -> rows [n, dim]; one warp per row.
TS_KERNEL(kWarp)
load_indexer(ts_fp8_records r, const uint8_t* pool, SlotChunk slots, float* rows) {
  const int i = block_index();
  const int64_t slot = cuda_module::slot_at(slots, i);
  const int64_t entry = slot % r.entries_per_page;
  const uint8_t* page = page_of(r, const_cast<uint8_t*>(pool), slot);
  const uint8_t* bytes = page + r.entries_per_page * r.dim + entry * 4;
  const float scale = bits_float(static_cast<uint32_t>(bytes[0]) | bytes[1] << 8 | bytes[2] << 16 |
                                 static_cast<uint32_t>(bytes[3]) << 24);
  const uint8_t* codes = page + entry * r.dim;
  float* row = rows + i * r.dim;
  for (int64_t c = thread_index(); c < r.dim; c += kWarp)
    row[c] = fmt::e4m3_to_float(codes[c]) * scale;
}

}  // namespace

cudaError_t launch_store_entries(const ts_fp8_records& records, const float* rows,
                                 const SlotChunk& slots, int n, uint8_t* pool, cudaStream_t stream,
                                 int64_t* first_bad, int64_t row0) {
  if (n <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(n));
  if (records.indexer != 0)
    TS_LAUNCH(store_indexer, grid, dim3(kWarp), 0, stream, records, rows, slots, pool, first_bad,
              row0);
  else
    TS_LAUNCH(store_latent, grid, dim3(kMainThreads), sizeof(int), stream, records, rows, slots,
              pool, first_bad, row0);
  return cudaGetLastError();
}

cudaError_t launch_load_entries(const ts_fp8_records& records, const uint8_t* pool,
                                const SlotChunk& slots, int n, float* rows, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(n));
  if (records.indexer != 0)
    TS_LAUNCH(load_indexer, grid, dim3(kWarp), 0, stream, records, pool, slots, rows);
  else
    TS_LAUNCH(load_latent, grid, dim3(kMainThreads), 0, stream, records, pool, slots, rows);
  return cudaGetLastError();
}

}  // namespace tessera::kvfp8
