#include "fp8_layout.hpp"

#include <cstring>

namespace tessera::kvfp8 {

namespace {

void copy_name(char (&dst)[16], const char* src) {
  std::memset(dst, 0, sizeof dst);
  std::strncpy(dst, src, sizeof dst - 1);
}

uint64_t round_up(uint64_t value, uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

LatentGeometry latent_geometry(int64_t dim, int64_t rope_dim) {
  LatentGeometry g;
  g.nope = dim - rope_dim;
  g.rope = rope_dim;
  g.groups = (g.nope + kGroupSize - 1) / kGroupSize;
  g.record_bytes = g.nope + 2 * g.rope;
  g.scale_bytes = g.groups + 1;  // sglang: nope // 64 scale bytes + scale_pad = 1
  return g;
}

std::string describe_layout(int32_t stream, int32_t dim, int32_t rope_dim, int32_t entries_per_page,
                            ts_kv_layout& out) {
  if (stream != TS_KV_MAIN && stream != TS_KV_INDEXER)
    return "unknown stream " + std::to_string(stream);
  if (dim <= 0 || rope_dim < 0 || rope_dim > dim || entries_per_page <= 0)
    return "need dim > 0, 0 <= rope_dim <= dim, entries_per_page > 0 (got dim " +
           std::to_string(dim) + ", rope_dim " + std::to_string(rope_dim) + ", entries_per_page " +
           std::to_string(entries_per_page) + ")";
  ts_kv_layout l{};
  l.struct_size = sizeof(ts_kv_layout);
  l.stream = stream;
  l.dim = dim;
  l.entries_per_page = entries_per_page;
  const auto entries = static_cast<uint64_t>(entries_per_page);
  if (stream == TS_KV_MAIN) {
    const LatentGeometry g = latent_geometry(dim, rope_dim);
    l.rope_dim = rope_dim;
    l.bytes_per_entry = static_cast<uint64_t>(g.record_bytes + g.scale_bytes);
    // FlashMLA quant.py / sglang create_buffer: page bytes rounded up to a multiple of 576, the
    // MODEL1 record size; generalised to this geometry's record size.
    l.page_bytes = round_up(entries * l.bytes_per_entry, static_cast<uint64_t>(g.record_bytes));
    l.payload_offset = 0;
    l.payload_stride = static_cast<uint64_t>(g.record_bytes);
    l.rope_offset = static_cast<uint64_t>(g.nope);
    l.rope_stride = static_cast<uint64_t>(g.record_bytes);
    l.scale_offset = entries * static_cast<uint64_t>(g.record_bytes);
    l.scale_stride = static_cast<uint64_t>(g.scale_bytes);
    copy_name(l.payload_dtype, "fp8_e4m3");
    copy_name(l.rope_dtype, "bf16");
    copy_name(l.scale_dtype, "ue8m0");
  } else {
    // All channels quantized together: the layout has no separate rope part.
    l.rope_dim = 0;
    l.bytes_per_entry = static_cast<uint64_t>(dim) + 4;
    l.page_bytes = entries * l.bytes_per_entry;
    l.payload_offset = 0;
    l.payload_stride = static_cast<uint64_t>(dim);
    l.rope_offset = 0;
    l.rope_stride = 0;
    l.scale_offset = entries * static_cast<uint64_t>(dim);
    l.scale_stride = 4;
    copy_name(l.payload_dtype, "fp8_e4m3");
    copy_name(l.rope_dtype, "");
    copy_name(l.scale_dtype, "fp32");
  }
  out = l;
  return "";
}

std::string check_layout(const ts_kv_layout& layout) {
  if (layout.struct_size < sizeof(ts_kv_layout))
    return "layout.struct_size " + std::to_string(layout.struct_size) + " < " +
           std::to_string(sizeof(ts_kv_layout));
  ts_kv_layout expected{};
  const std::string why = describe_layout(layout.stream, layout.dim, layout.rope_dim,
                                          layout.entries_per_page, expected);
  if (!why.empty()) return "layout: " + why;
  auto differs = [](const char* field, uint64_t got, uint64_t want) {
    return std::string("layout.") + field + " is " + std::to_string(got) + ", this format has " +
           std::to_string(want) + " (was the layout made by another plugin's describe()?)";
  };
  if (layout.bytes_per_entry != expected.bytes_per_entry)
    return differs("bytes_per_entry", layout.bytes_per_entry, expected.bytes_per_entry);
  if (layout.page_bytes != expected.page_bytes)
    return differs("page_bytes", layout.page_bytes, expected.page_bytes);
  if (layout.payload_offset != expected.payload_offset ||
      layout.payload_stride != expected.payload_stride)
    return differs("payload_stride", layout.payload_stride, expected.payload_stride);
  if (layout.rope_offset != expected.rope_offset || layout.rope_stride != expected.rope_stride)
    return differs("rope_offset", layout.rope_offset, expected.rope_offset);
  if (layout.scale_offset != expected.scale_offset || layout.scale_stride != expected.scale_stride)
    return differs("scale_offset", layout.scale_offset, expected.scale_offset);
  if (std::strncmp(layout.payload_dtype, expected.payload_dtype, sizeof layout.payload_dtype) != 0)
    return "layout.payload_dtype is not fp8_e4m3 (a layout of another format?)";
  return "";
}

}  // namespace tessera::kvfp8
