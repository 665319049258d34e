#include "weights/dtype.hpp"

#include <array>
#include <utility>

namespace tessera::weights {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  int bits;
};

// Order matches the enum so dtype_name/dtype_bits can index directly.
constexpr std::array<DTypeInfo, 22> kDTypes{{
    {DType::F64, "F64", 64},        {DType::F32, "F32", 32},
    {DType::F16, "F16", 16},        {DType::BF16, "BF16", 16},
    {DType::F8_E4M3, "F8_E4M3", 8}, {DType::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8},
    {DType::F8_E5M2, "F8_E5M2", 8}, {DType::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8},
    {DType::F8_E8M0, "F8_E8M0", 8}, {DType::F6_E2M3, "F6_E2M3", 6},
    {DType::F6_E3M2, "F6_E3M2", 6}, {DType::F4, "F4", 4},
    {DType::C64, "C64", 64},        {DType::I64, "I64", 64},
    {DType::I32, "I32", 32},        {DType::I16, "I16", 16},
    {DType::I8, "I8", 8},           {DType::U64, "U64", 64},
    {DType::U32, "U32", 32},        {DType::U16, "U16", 16},
    {DType::U8, "U8", 8},           {DType::BOOL, "BOOL", 8},
}};

constexpr bool table_matches_enum() {
  for (std::size_t i = 0; i < kDTypes.size(); ++i) {
    if (static_cast<std::size_t>(kDTypes[i].dtype) != i) {
      return false;
    }
  }
  return true;
}
static_assert(table_matches_enum(), "kDTypes must list the DType enumerators in order");

}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& info : kDTypes) {
    if (info.name == name) {
      return info.dtype;
    }
  }
  return std::nullopt;
}

std::string_view dtype_name(DType dtype) { return kDTypes[static_cast<std::size_t>(dtype)].name; }

int dtype_bits(DType dtype) { return kDTypes[static_cast<std::size_t>(dtype)].bits; }

}  // namespace tessera::weights
