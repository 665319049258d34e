#include "kv_layouts.hpp"

#include <cstring>

namespace tessera::mma {
namespace {

std::string str(int64_t v) { return std::to_string(v); }
std::string dtype_of(const char (&name)[16]) { return std::string(name, strnlen(name, 16)); }

const char kFix[] =
    ". Fix: use the kv-cache plugin \"bf16\" (storage = \"bf16\") or \"fp8\" with attention "
    "\"mma\", or attention \"reference\" for other formats";

// Records of entries_per_page entries fit in page_bytes; every record and the page 16-byte
// aligned (cp.async reads 16-byte chunks).
std::string check_records(const ts_kv_layout& l, uint64_t record, const char* which) {
  if (l.payload_offset % 16 != 0 || l.payload_stride % 16 != 0 || l.page_bytes % 16 != 0) {
    return std::string(which) + " cache: records must be 16-byte aligned (offset " +
           str(static_cast<int64_t>(l.payload_offset)) + ", stride " +
           str(static_cast<int64_t>(l.payload_stride)) + ", page " +
           str(static_cast<int64_t>(l.page_bytes)) + ")";
  }
  if (l.entries_per_page <= 0 ||
      l.page_bytes < l.payload_offset +
                         (static_cast<uint64_t>(l.entries_per_page) - 1) * l.payload_stride +
                         record) {
    return std::string(which) + " cache: entries_per_page records do not fit in page_bytes";
  }
  return "";
}

std::string read_bf16(const ts_kv_layout& l, int32_t dim, const char* which) {
  const uint64_t record = static_cast<uint64_t>(dim) * 2;
  const bool contiguous =
      l.rope_offset == l.payload_offset + static_cast<uint64_t>(dim - l.rope_dim) * 2 &&
      (l.rope_dim == 0 || l.rope_stride == l.payload_stride);
  if (!contiguous || l.payload_stride < record) {
    return std::string(which) + " cache: payload and rope part are not one contiguous record" +
           kFix;
  }
  return check_records(l, record, which);
}

// Main entries: nope e4m3 | rope bf16 in a record of exactly nope + 2 rope bytes, the scales of
// entry e at scale_offset + e * scale_stride (one byte per 64 nope channels).
std::string read_fp8_main(const ts_kv_layout& l, int32_t dim, const char* which, RecordFormat& f) {
  const int64_t nope = dim - l.rope_dim;
  if (dtype_of(l.rope_dtype) != "bf16" || dtype_of(l.scale_dtype) != "ue8m0") {
    return std::string(which) +
           " cache: fp8 main entries need bf16 rope values and ue8m0 "
           "scales, the layout has '" +
           dtype_of(l.rope_dtype) + "' and '" + dtype_of(l.scale_dtype) + "'" + kFix;
  }
  if (nope % 16 != 0) {
    return std::string(which) + " cache: fp8 entries need a multiple of 16 e4m3 channels " +
           "(head_dim - rope_dim = " + str(nope) + ")";
  }
  const auto record = static_cast<uint64_t>(nope + 2 * static_cast<int64_t>(l.rope_dim));
  if (l.payload_offset != 0 || l.payload_stride != record ||
      l.rope_offset != static_cast<uint64_t>(nope) || l.rope_stride != record) {
    return std::string(which) + " cache: fp8 records are not nope e4m3 bytes followed by the " +
           "rope bf16 values (stride " + str(static_cast<int64_t>(l.payload_stride)) + ")";
  }
  const auto groups = static_cast<uint64_t>((nope + 63) / 64);
  const uint64_t records_end = static_cast<uint64_t>(l.entries_per_page) * record;
  if (l.scale_stride < groups || l.scale_offset < records_end ||
      l.scale_offset + static_cast<uint64_t>(l.entries_per_page) * l.scale_stride > l.page_bytes) {
    return std::string(which) + " cache: fp8 scales (offset " +
           str(static_cast<int64_t>(l.scale_offset)) + ", stride " +
           str(static_cast<int64_t>(l.scale_stride)) + ") do not follow the page's records";
  }
  f.nope = static_cast<int32_t>(nope);
  return check_records(l, record, which);
}

// Indexer keys: dim e4m3 bytes per key, the fp32 scale of key e at scale_offset + 4 e.
std::string read_fp8_keys(const ts_kv_layout& l, int32_t dim, const char* which) {
  if (dtype_of(l.scale_dtype) != "fp32" || l.scale_stride != 4) {
    return std::string(which) + " cache: fp8 keys need one fp32 scale each, the layout has '" +
           dtype_of(l.scale_dtype) + "' every " + str(static_cast<int64_t>(l.scale_stride)) +
           " bytes" + kFix;
  }
  if (dim % 8 != 0 || l.payload_offset != 0 || l.payload_stride != static_cast<uint64_t>(dim) ||
      l.page_bytes % 4 != 0 || l.scale_offset % 4 != 0) {
    return std::string(which) + " cache: fp8 keys must be " + str(dim) +
           " bytes each (a multiple of 8) with 4-byte aligned pages and scales";
  }
  if (l.scale_offset < static_cast<uint64_t>(l.entries_per_page) * l.payload_stride ||
      l.scale_offset + static_cast<uint64_t>(l.entries_per_page) * 4 > l.page_bytes) {
    return std::string(which) + " cache: fp8 key scales do not follow the page's keys";
  }
  return "";
}

}  // namespace

std::string read_layout(const ts_kv_layout* layout, int32_t dim, const char* which,
                        RecordFormat& format) {
  if (layout == nullptr) {
    return std::string(which) + " cache layout is missing";
  }
  const ts_kv_layout& l = *layout;
  if (l.dim != dim) {
    return std::string(which) + " cache entries have " + str(l.dim) + " values, the layer needs " +
           str(dim);
  }
  format = RecordFormat{};
  format.page_bytes = static_cast<int64_t>(l.page_bytes);
  format.record_bytes = static_cast<int64_t>(l.payload_stride);
  format.scale_offset = static_cast<int64_t>(l.scale_offset);
  format.scale_stride = static_cast<int64_t>(l.scale_stride);
  const std::string payload = dtype_of(l.payload_dtype);
  if (payload == "bf16" && (l.rope_dim == 0 || dtype_of(l.rope_dtype) == "bf16") &&
      l.scale_stride == 0) {
    return read_bf16(l, dim, which);
  }
  if (payload == "fp8_e4m3") {
    format.fp8 = 1;
    if (l.stream == TS_KV_INDEXER) {
      return read_fp8_keys(l, dim, which);
    }
    return read_fp8_main(l, dim, which, format);
  }
  return std::string("mma attention reads the 'bf16' and 'fp8' kv-cache formats; the ") + which +
         " cache stores payload '" + payload + "', rope '" + dtype_of(l.rope_dtype) + "'" +
         (l.scale_stride != 0 ? " with scales '" + dtype_of(l.scale_dtype) + "'" : "") + kFix;
}

}  // namespace tessera::mma
