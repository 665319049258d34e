#include "weights/safetensors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "util/check.hpp"

namespace tessera::weights {
namespace {

using nlohmann::json;

// root object (1) -> tensor entry / __metadata__ (2) -> shape or data_offsets array (3).
constexpr int kMaxJsonDepth = 3;
constexpr std::size_t kMaxRank = 16;

[[noreturn]] void fail(std::string_view source, const std::string& what) {
  throw Error(fmt::format("{}: {}", source, what));
}

uint64_t read_le_u64(const std::byte* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) {
    value = (value << 8) | static_cast<uint64_t>(p[i]);
  }
  return value;
}

// A JSON integer >= 0 (unsigned or non-negative signed); floats and strings are refused.
bool as_non_negative(const json& value, uint64_t& out) {
  if (value.is_number_unsigned()) {
    out = value.get<uint64_t>();
    return true;
  }
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    out = static_cast<uint64_t>(value.get<int64_t>());
    return true;
  }
  return false;
}

json parse_json_bounded(std::string_view text, std::string_view source) {
  std::unordered_set<std::string> top_level_keys;
  json::parser_callback_t guard = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxJsonDepth) {
      fail(source, fmt::format("header JSON nests deeper than {} levels", kMaxJsonDepth));
    }
    if (event == json::parse_event_t::key && depth == 1) {
      auto key = parsed.get<std::string>();
      if (!top_level_keys.insert(key).second) {
        fail(source, fmt::format("tensor '{}' appears twice in the header", key));
      }
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), guard);
  } catch (const json::exception& e) {
    fail(source, fmt::format("header is not valid JSON: {}", e.what()));
  }
}

TensorInfo parse_entry(const std::string& name, const json& entry, uint64_t data_size,
                       std::string_view source) {
  auto bad = [&](const std::string& why) {
    fail(source, fmt::format("tensor '{}': {}", name, why));
  };
  if (!entry.is_object()) {
    bad("entry is not a JSON object");
  }
  TensorInfo info;
  info.name = name;

  const auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    bad("missing string field 'dtype'");
  }
  const auto dtype = parse_dtype(dtype_it->get_ref<const std::string&>());
  if (!dtype) {
    bad(fmt::format("unknown dtype '{}'", dtype_it->get<std::string>()));
  }
  info.dtype = *dtype;

  const auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) {
    bad("missing array field 'shape'");
  }
  if (shape_it->size() > kMaxRank) {
    bad(fmt::format("rank {} exceeds {}", shape_it->size(), kMaxRank));
  }
  // numel * bits must fit in 64 bits; dims are checked one by one so a huge dim cannot wrap.
  uint64_t total_bits = static_cast<uint64_t>(dtype_bits(info.dtype));
  for (const auto& dim : *shape_it) {
    uint64_t d = 0;
    if (!as_non_negative(dim, d) || d > static_cast<uint64_t>(INT64_MAX)) {
      bad(fmt::format("shape entry {} is not a non-negative integer", dim.dump()));
    }
    info.shape.push_back(static_cast<int64_t>(d));
    if (__builtin_mul_overflow(total_bits, d, &total_bits)) {
      bad(fmt::format("shape {} is too large", shape_it->dump()));
    }
  }
  if (total_bits % 8 != 0) {
    bad(fmt::format("shape {} of {} does not fill whole bytes", shape_it->dump(),
                    dtype_name(info.dtype)));
  }

  const auto offsets_it = entry.find("data_offsets");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
      !as_non_negative((*offsets_it)[0], info.begin) ||
      !as_non_negative((*offsets_it)[1], info.end)) {
    bad("'data_offsets' must be [begin, end] with non-negative integers");
  }
  if (info.begin > info.end) {
    bad(fmt::format("data_offsets [{}, {}] end before they begin", info.begin, info.end));
  }
  if (info.end > data_size) {
    bad(
        fmt::format("data_offsets [{}, {}] run past the end of the data section ({} bytes): "
                    "file truncated?",
                    info.begin, info.end, data_size));
  }
  if (total_bits / 8 != info.end - info.begin) {
    bad(fmt::format("shape {} of {} needs {} bytes but data_offsets [{}, {}] span {}",
                    fmt::join(info.shape, ","), dtype_name(info.dtype), total_bits / 8, info.begin,
                    info.end, info.end - info.begin));
  }
  return info;
}

}  // namespace

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    n *= d;
  }
  return n;
}

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file,
                                           std::string_view source) {
  if (file.size() < 8) {
    fail(source, fmt::format("truncated: {} bytes, but a safetensors file starts with an 8-byte "
                             "header length",
                             file.size()));
  }
  const uint64_t header_len = read_le_u64(file.data());
  if (header_len > kMaxSafetensorsHeaderBytes) {
    fail(source, fmt::format("header length {} exceeds the limit of {} bytes (corrupt file or not "
                             "safetensors)",
                             header_len, kMaxSafetensorsHeaderBytes));
  }
  if (header_len > file.size() - 8) {
    fail(source, fmt::format("truncated: header length {} runs past the end of the file ({} bytes)",
                             header_len, file.size()));
  }

  SafetensorsHeader header;
  header.data_offset = 8 + header_len;
  header.data_size = file.size() - header.data_offset;
  const std::string_view text(reinterpret_cast<const char*>(file.data() + 8), header_len);
  const json root = parse_json_bounded(text, source);
  if (!root.is_object()) {
    fail(source, "header JSON is not an object");
  }

  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) {
        fail(source, "'__metadata__' is not an object");
      }
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          fail(source, fmt::format("'__metadata__' value for '{}' is not a string", key));
        }
        header.metadata.emplace(key, value.get<std::string>());
      }
      continue;
    }
    header.tensors.push_back(parse_entry(name, entry, header.data_size, source));
  }

  auto& tensors = header.tensors;
  std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // Empty tensors occupy no bytes and cannot overlap anything.
  const TensorInfo* previous = nullptr;
  for (const auto& t : tensors) {
    if (t.begin == t.end) {
      continue;
    }
    if (previous != nullptr && t.begin < previous->end) {
      fail(source,
           fmt::format("tensors '{}' (bytes [{}, {})) and '{}' (bytes [{}, {})) overlap",
                       previous->name, previous->begin, previous->end, t.name, t.begin, t.end));
    }
    previous = &t;
  }
  return header;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  SafetensorsFile file;
  file.map_ = MappedFile::open(path);
  file.header_ = parse_safetensors_header(file.map_.bytes(), path.string());
  for (std::size_t i = 0; i < file.header_.tensors.size(); ++i) {
    file.by_name_.emplace(file.header_.tensors[i].name, i);
  }
  return file;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &header_.tensors[it->second];
}

std::span<const std::byte> SafetensorsFile::data(const TensorInfo& tensor) const {
  return map_.bytes().subspan(header_.data_offset + tensor.begin, tensor.byte_size());
}

}  // namespace tessera::weights
