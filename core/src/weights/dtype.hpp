// Element types of the safetensors format (names as written in the header) and their storage
// width. Sub-byte types (F4, F6_*) are counted in bits so byte sizes stay exact.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera::weights {

enum class DType : uint8_t {
  F64,
  F32,
  F16,
  BF16,
  F8_E4M3,  // OCP e4m3 "fn": bias 7, no infinities, 0x7f/0xff = NaN
  F8_E4M3FNUZ,
  F8_E5M2,
  F8_E5M2FNUZ,
  F8_E8M0,  // UE8M0 scale: byte e -> 2^(e-127), 0xff = NaN
  F6_E2M3,
  F6_E3M2,
  F4,  // e2m1, two per byte, low nibble first (element 2i in bits 0..3)
  C64,
  I64,
  I32,
  I16,
  I8,
  U64,
  U32,
  U16,
  U8,
  BOOL,
};

// "BF16" -> DType::BF16; nullopt for a name the format does not define.
[[nodiscard]] std::optional<DType> parse_dtype(std::string_view name);
[[nodiscard]] std::string_view dtype_name(DType dtype);
[[nodiscard]] int dtype_bits(DType dtype);  // 4 for F4, 8 for I8, 32 for F32, ...

}  // namespace tessera::weights
