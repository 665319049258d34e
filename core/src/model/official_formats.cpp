#include "model/official_formats.hpp"

#include <string_view>

namespace tessera::dsv4 {
namespace {

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

StoredFormat official_format(const TensorSpec& spec) {
  switch (spec.kind) {
    case StorageKind::TokenTable:
      return StoredFormat::I64Table;
    case StorageKind::RoutedExpert:
      return StoredFormat::Fp4Groups;
    case StorageKind::Linear:
      // The router (ffn.gate), the compressors' wkv / wgate, the indexer's weights_proj and the
      // head are BF16 in the release; every other projection is FP8.
      if (spec.name == "head.weight" || contains(spec.name, "compressor.") ||
          contains(spec.name, "weights_proj") || contains(spec.name, "ffn.gate.")) {
        return StoredFormat::BF16;
      }
      return StoredFormat::Fp8Blocks;
    case StorageKind::Dense:
      break;
  }
  if (contains(spec.name, "hc_") || contains(spec.name, "attn_sink") ||
      contains(spec.name, ".ape") || contains(spec.name, "gate.bias")) {
    return StoredFormat::F32;
  }
  return StoredFormat::BF16;
}

std::vector<weights::TensorDeclaration> official_declarations(const TensorSpec& spec) {
  using weights::DType;
  const auto& s = spec.shape;
  switch (official_format(spec)) {
    case StoredFormat::F32:
      return {{spec.name, DType::F32, s}};
    case StoredFormat::BF16:
      return {{spec.name, DType::BF16, s}};
    case StoredFormat::I64Table:
      return {{spec.name, DType::I64, s}};
    case StoredFormat::Fp8Blocks:
      return {{spec.name, DType::F8_E4M3, s},
              {spec.name.substr(0, spec.name.size() - 6) + "scale",
               DType::F8_E8M0,
               {ceil_div(s[0], 128), ceil_div(s[1], 128)}}};
    case StoredFormat::Fp4Groups:
      return {
          {spec.name, DType::I8, {s[0], s[1] / 2}},
          {spec.name.substr(0, spec.name.size() - 6) + "scale", DType::F8_E8M0, {s[0], s[1] / 32}}};
  }
  return {};
}

uint64_t official_bytes(const TensorSpec& spec) {
  uint64_t bytes = 0;
  for (const auto& d : official_declarations(spec)) bytes += d.byte_size();
  return bytes;
}

}  // namespace tessera::dsv4
