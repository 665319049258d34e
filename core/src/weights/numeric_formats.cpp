#include "weights/numeric_formats.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include "util/check.hpp"

namespace tessera::weights {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

constexpr float decode_e4m3(uint8_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x80) << 24;
  const uint32_t exponent = (bits >> 3) & 0xF;
  const uint32_t mantissa = bits & 0x7;
  if (exponent == 0xF && mantissa == 0x7) {
    return kNaN;
  }
  if (exponent == 0) {  // subnormal: m/8 * 2^-6 = m * 2^-9
    const float magnitude = static_cast<float>(mantissa) / 512.0f;
    return sign != 0 ? -magnitude : magnitude;
  }
  // Rebias 7 -> 127 and widen the mantissa 3 -> 23 bits.
  return std::bit_cast<float>(sign | ((exponent + 120) << 23) | (mantissa << 20));
}

constexpr float decode_ue8m0(uint8_t bits) {
  if (bits == 0xFF) {
    return kNaN;
  }
  if (bits == 0) {
    return std::bit_cast<float>(uint32_t{0x00400000});  // 2^-127, an fp32 subnormal
  }
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 23);
}

constexpr float decode_e2m1(uint8_t nibble) {
  constexpr std::array<float, 8> kMagnitude{0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float magnitude = kMagnitude[nibble & 0x7];
  return (nibble & 0x8) != 0 ? -magnitude : magnitude;
}

template <typename Decode>
constexpr std::array<float, 256> byte_table(Decode decode) {
  std::array<float, 256> table{};
  for (int i = 0; i < 256; ++i) {
    table[i] = decode(static_cast<uint8_t>(i));
  }
  return table;
}

constexpr auto kE4M3 = byte_table(decode_e4m3);
constexpr auto kUE8M0 = byte_table(decode_ue8m0);

// Both FP4 values of one byte: [0] = low nibble (even column), [1] = high nibble.
constexpr std::array<std::array<float, 2>, 256> kFp4Pairs = [] {
  std::array<std::array<float, 2>, 256> table{};
  for (int i = 0; i < 256; ++i) {
    table[i] = {decode_e2m1(static_cast<uint8_t>(i & 0xF)),
                decode_e2m1(static_cast<uint8_t>(i >> 4))};
  }
  return table;
}();

template <typename T>
T load_unaligned(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

}  // namespace

float bf16_to_f32(uint16_t bits) noexcept { return std::bit_cast<float>(uint32_t{bits} << 16); }

float f16_to_f32(uint16_t bits) noexcept {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  const uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0) {  // zero or subnormal: m * 2^-24, exact in fp32
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 0x1F) {
    return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

float fp8_e4m3_to_f32(uint8_t bits) noexcept { return kE4M3[bits]; }
float ue8m0_to_f32(uint8_t bits) noexcept { return kUE8M0[bits]; }
float fp4_e2m1_to_f32(uint8_t nibble) noexcept { return decode_e2m1(nibble); }

bool is_convertible_to_f32(DType dtype) noexcept {
  switch (dtype) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::F8_E4M3:
    case DType::F8_E8M0:
      return true;
    default:
      return false;
  }
}

void convert_to_f32(DType dtype, std::span<const std::byte> src, std::span<float> dst) {
  TS_CHECK(is_convertible_to_f32(dtype), "cannot convert {} to F32", dtype_name(dtype));
  const std::size_t n = dst.size();
  TS_CHECK_EQ(src.size(), n * static_cast<std::size_t>(dtype_bits(dtype) / 8),
              "convert_to_f32 source bytes");
  const std::byte* s = src.data();
  float* d = dst.data();
  switch (dtype) {
    case DType::F32:
      std::memcpy(d, s, n * sizeof(float));
      break;
    case DType::BF16:
      for (std::size_t i = 0; i < n; ++i) {
        d[i] = bf16_to_f32(load_unaligned<uint16_t>(s + 2 * i));
      }
      break;
    case DType::F16:
      for (std::size_t i = 0; i < n; ++i) {
        d[i] = f16_to_f32(load_unaligned<uint16_t>(s + 2 * i));
      }
      break;
    case DType::F8_E4M3:
      for (std::size_t i = 0; i < n; ++i) {
        d[i] = kE4M3[static_cast<uint8_t>(s[i])];
      }
      break;
    case DType::F8_E8M0:
      for (std::size_t i = 0; i < n; ++i) {
        d[i] = kUE8M0[static_cast<uint8_t>(s[i])];
      }
      break;
    default:
      break;
  }
}

void dequantize_fp8_blocks(std::span<const std::byte> weight, int64_t rows, int64_t cols,
                           std::span<const float> scale, int64_t block_rows, int64_t block_cols,
                           std::span<float> out) {
  TS_CHECK(block_rows > 0 && block_cols > 0, "FP8 block size must be positive");
  const int64_t scale_cols = (cols + block_cols - 1) / block_cols;
  const int64_t scale_rows = (rows + block_rows - 1) / block_rows;
  TS_CHECK_EQ(weight.size(), static_cast<std::size_t>(rows * cols), "FP8 weight bytes");
  TS_CHECK_EQ(out.size(), static_cast<std::size_t>(rows * cols), "FP8 output elements");
  TS_CHECK_EQ(scale.size(), static_cast<std::size_t>(scale_rows * scale_cols),
              "FP8 scale elements");
  const auto* w = reinterpret_cast<const uint8_t*>(weight.data());
  for (int64_t r = 0; r < rows; ++r) {
    const float* row_scale = scale.data() + (r / block_rows) * scale_cols;
    const uint8_t* w_row = w + r * cols;
    float* o_row = out.data() + r * cols;
    for (int64_t c0 = 0; c0 < cols; c0 += block_cols) {
      const float s = row_scale[c0 / block_cols];
      const int64_t c1 = std::min(cols, c0 + block_cols);
      for (int64_t c = c0; c < c1; ++c) {
        o_row[c] = kE4M3[w_row[c]] * s;
      }
    }
  }
}

void dequantize_fp4_groups(std::span<const std::byte> packed, int64_t rows, int64_t cols,
                           std::span<const float> scale, int64_t group, std::span<float> out) {
  TS_CHECK(group > 0 && group % 2 == 0, "FP4 group size must be a positive even number");
  TS_CHECK(cols % 2 == 0, "FP4 rows must hold an even number of columns, got {}", cols);
  const int64_t scale_cols = (cols + group - 1) / group;
  TS_CHECK_EQ(packed.size(), static_cast<std::size_t>(rows * cols / 2), "FP4 weight bytes");
  TS_CHECK_EQ(out.size(), static_cast<std::size_t>(rows * cols), "FP4 output elements");
  TS_CHECK_EQ(scale.size(), static_cast<std::size_t>(rows * scale_cols), "FP4 scale elements");
  const auto* w = reinterpret_cast<const uint8_t*>(packed.data());
  for (int64_t r = 0; r < rows; ++r) {
    const float* row_scale = scale.data() + r * scale_cols;
    const uint8_t* w_row = w + r * (cols / 2);
    float* o_row = out.data() + r * cols;
    for (int64_t c0 = 0; c0 < cols; c0 += group) {
      const float s = row_scale[c0 / group];
      const int64_t c1 = std::min(cols, c0 + group);
      for (int64_t c = c0; c < c1; c += 2) {
        const auto& pair = kFp4Pairs[w_row[c / 2]];
        o_row[c] = pair[0] * s;
        o_row[c + 1] = pair[1] * s;
      }
    }
  }
}

}  // namespace tessera::weights
