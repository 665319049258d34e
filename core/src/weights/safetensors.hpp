// The safetensors format (https://huggingface.co/docs/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, optional
// "__metadata__": {str: str}}, then the data section; offsets are relative to its start.
//
// parse_safetensors_header() trusts nothing: N is checked against the file size and a hard
// limit before anything is allocated, the JSON nesting depth is bounded, every entry is checked
// (known dtype, non-negative shape, numel * bits / 8 == end - begin without overflow, span inside
// the data section) and no two tensors may overlap or share a name. It is the fuzzed entry point.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weights/dtype.hpp"
#include "weights/mapped_file.hpp"

namespace tessera::weights {

// The reference implementation's limit; real headers are well under 10 MB.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;

  [[nodiscard]] int64_t numel() const;  // product of shape (1 for a scalar)
  [[nodiscard]] uint64_t byte_size() const { return end - begin; }
};

struct SafetensorsHeader {
  uint64_t data_offset = 0;                     // 8 + header length: where the data section starts
  uint64_t data_size = 0;                       // bytes after the header
  std::vector<TensorInfo> tensors;              // sorted by begin offset (file order)
  std::map<std::string, std::string> metadata;  // "__metadata__", e.g. {"format": "pt"}
};

// Validates the whole header of `file` (the complete file contents). Throws tessera::Error that
// starts with `source_name` and names the offending tensor and the reason.
[[nodiscard]] SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file,
                                                         std::string_view source_name);

// A memory-mapped, validated safetensors file. Move-only; tensor data stays valid while it lives.
class SafetensorsFile {
 public:
  [[nodiscard]] static SafetensorsFile open(const std::filesystem::path& path);

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return map_.path(); }
  [[nodiscard]] const SafetensorsHeader& header() const noexcept { return header_; }
  [[nodiscard]] const std::vector<TensorInfo>& tensors() const noexcept { return header_.tensors; }
  [[nodiscard]] const TensorInfo* find(std::string_view name) const;  // nullptr when absent
  [[nodiscard]] std::span<const std::byte> data(const TensorInfo& tensor) const;

 private:
  MappedFile map_;
  SafetensorsHeader header_;
  std::map<std::string, std::size_t, std::less<>> by_name_;  // index into header_.tensors
};

}  // namespace tessera::weights
