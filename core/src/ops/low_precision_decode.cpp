// Every path decodes as the scalar one does (a formats:: value times the scale in fp32, the top
// half of the product's bits kept), lane by lane, so all give the same bits:
// - e4m3: a normal code's magnitude bits moved to fp32's place with the exponent rebiased
//   (+120); a subnormal one (exponent 0) as its mantissa times 2^-9; 0x7F as NaN; then the sign.
// - e2m1: the value looked up in a table of the sixteen codes (AVX2: of the eight magnitudes,
//   then the sign).
// - By table (AVX-512 BW): the unscaled value's bf16 bits looked up, then the scale's exponent
//   added to their exponent field, which is the product's bits wherever the product is a normal
//   bf16 number (the scales for which every value's is take this path).
// Only functions marked TS_AVX512 / TS_AVX2 use those instructions (the file is compiled for the
// baseline ISA); they run after a check of the CPU (linear_detail::avx512_kernel,
// use_own_kernel).
#include "ops/low_precision_decode.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "kernels/number_formats.cuh"
#include "ops/gemm_nt.hpp"
#include "ops/gemm_nt_blocks.hpp"  // TS_AVX512, TS_AVX2
#include "ops/linear_detail.hpp"
#include "util/check.hpp"

namespace tessera::ops {
namespace {

constexpr int64_t kBlock = 128;  // FP8 scale blocks
constexpr int64_t kGroup = 32;   // FP4 scale groups
// W's rows are a page or so long, and the hardware's streamer starts again at each page: the
// loops ask for the bytes this far ahead.
constexpr int64_t kAhead = 4096;

uint16_t top_half(float v) {
  uint32_t b = 0;
  std::memcpy(&b, &v, 4);
  return static_cast<uint16_t>(b >> 16);
}

// Rows [j0, j1) x inputs [i0, i1) of a tile (rows `in` apart), one value at a time.
void fp8_scalar(const uint8_t* w, const uint8_t* w_scale, int64_t in, int64_t o0, int64_t j0,
                int64_t j1, int64_t i0, int64_t i1, uint16_t* out) {
  const int64_t blocks = (in + kBlock - 1) / kBlock;
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t o = o0 + j;
    for (int64_t i = i0; i < i1; ++i) {
      const float s = formats::ue8m0_to_float(w_scale[o / kBlock * blocks + i / kBlock]);
      out[j * in + i] = top_half(formats::e4m3_to_float(w[o * in + i]) * s);
    }
  }
}

// One row of an FP4 weight.
void fp4_scalar(const uint8_t* w, int64_t in, const uint8_t* scales, uint16_t* out) {
  for (int64_t i = 0; i < in; ++i) {
    const uint8_t pair = w[i / 2];
    const float s = formats::ue8m0_to_float(scales[i / kGroup]);
    out[i] = top_half(formats::e2m1_to_float(i % 2 == 0 ? pair & 0xF : pair >> 4) * s);
  }
}

// ---- AVX-512 ----

// 16 e4m3 codes times s, as bf16.
TS_AVX512 inline __m256i e4m3_16(__m128i codes, __m512 s) {
  const __m512i low7 = _mm512_set1_epi32(0x7F);
  const __m512i v = _mm512_cvtepu8_epi32(codes);
  const __m512i mag = _mm512_and_si512(v, low7);
  const __m512 normal = _mm512_castsi512_ps(
      _mm512_add_epi32(_mm512_slli_epi32(mag, 20), _mm512_set1_epi32(120 << 23)));
  const __m512 subnormal = _mm512_mul_ps(_mm512_cvtepi32_ps(mag), _mm512_set1_ps(1.0f / 512.0f));
  const __mmask16 is_subnormal = _mm512_cmplt_epi32_mask(mag, _mm512_set1_epi32(8));
  const __m512 value = _mm512_mul_ps(_mm512_mask_blend_ps(is_subnormal, normal, subnormal), s);
  __m512i bits =
      _mm512_mask_mov_epi32(_mm512_castps_si512(value), _mm512_cmpeq_epi32_mask(mag, low7),
                            _mm512_set1_epi32(0x7FC00000));
  bits = _mm512_or_si512(bits, _mm512_slli_epi32(_mm512_srli_epi32(v, 7), 31));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16));
}

// One row's inputs [0, count) with one scale; count % 16 == 0.
TS_AVX512 void e4m3_row_avx512(const uint8_t* w, int64_t count, float scale, uint16_t* out) {
  const __m512 s = _mm512_set1_ps(scale);
  for (int64_t i = 0; i < count; i += 16) {
    _mm_prefetch(reinterpret_cast<const char*>(w + i + kAhead), _MM_HINT_T0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        e4m3_16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i)), s));
  }
}

// ---- AVX-512 BW: e4m3 by table ----

#define TS_AVX512_BW __attribute__((target("avx512f,avx512dq,avx512bw")))

bool avx512_bw() {
  static const bool ok = __builtin_cpu_supports("avx512bw");
  return ok;
}

// A scale 2^e with every e4m3 magnitude times it a normal bf16 number (2^-9 .. 448 times 2^e
// inside 2^-126 .. 2^127): the table's values scale by adding e to their exponent field.
bool table_scales(float scale, int32_t& e) {
  uint32_t b = 0;
  std::memcpy(&b, &scale, 4);
  e = static_cast<int32_t>(b >> 23) - 127;
  return (b & 0x807FFFFFu) == 0 && e >= -117 && e <= 119;
}

// The bf16 bits of every e4m3 magnitude code (0x7F: NaN).
const uint16_t* e4m3_magnitudes() {
  alignas(64) static const std::array<uint16_t, 128> table = [] {
    std::array<uint16_t, 128> t{};
    for (int m = 0; m < 128; ++m) {
      t[static_cast<size_t>(m)] = top_half(formats::e4m3_to_float(static_cast<uint8_t>(m)));
    }
    return t;
  }();
  return table.data();
}

// One row's inputs [0, count) times 2^e (table_scales), 32 at a time: the magnitude looked up in
// the 128-entry table (two 64-entry permutes), its exponent moved by e unless it is zero or NaN,
// then the sign. count % 16 == 0.
TS_AVX512_BW void e4m3_row_table(const uint8_t* w, int64_t count, float scale, int32_t e,
                                 uint16_t* out) {
  const uint16_t* t = e4m3_magnitudes();
  const __m512i t0 = _mm512_load_si512(t), t1 = _mm512_load_si512(t + 32);
  const __m512i t2 = _mm512_load_si512(t + 64), t3 = _mm512_load_si512(t + 96);
  const __m512i low7 = _mm512_set1_epi16(0x7F), upper = _mm512_set1_epi16(0x40);
  const __m512i exponent = _mm512_set1_epi16(static_cast<int16_t>(e * 128));
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    _mm_prefetch(reinterpret_cast<const char*>(w + i + kAhead), _MM_HINT_T0);
    const __m512i v =
        _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i)));
    const __m512i mag = _mm512_and_si512(v, low7);
    __m512i bits = _mm512_mask_blend_epi16(_mm512_test_epi16_mask(mag, upper),
                                           _mm512_permutex2var_epi16(t0, mag, t1),
                                           _mm512_permutex2var_epi16(t2, mag, t3));
    const __mmask32 finite_nonzero =
        _mm512_test_epi16_mask(mag, low7) & _mm512_cmpneq_epi16_mask(mag, low7);
    bits = _mm512_mask_add_epi16(bits, finite_nonzero, bits, exponent);
    bits = _mm512_or_si512(bits, _mm512_slli_epi16(_mm512_srli_epi16(v, 7), 15));
    _mm512_storeu_si512(out + i, bits);
  }
  if (i < count) {  // 16 left
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(out + i),
        e4m3_16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i)), _mm512_set1_ps(scale)));
  }
}

TS_AVX512 void e2m1_row_avx512(const uint8_t* w, int64_t in, const uint8_t* scales, uint16_t* out) {
  const __m512 table = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f,
                                      -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
  const __m512i high_half = _mm512_set1_epi32(static_cast<int32_t>(0xFFFF0000u));
  for (int64_t g = 0; g < in / kGroup; ++g) {
    _mm_prefetch(reinterpret_cast<const char*>(w + g * 16 + kAhead), _MM_HINT_T0);
    const __m512 s = _mm512_set1_ps(formats::ue8m0_to_float(scales[g]));
    const __m512i v =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + g * 16)));
    const __m512 lo = _mm512_mul_ps(_mm512_permutexvar_ps(v, table), s);
    const __m512 hi = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), table), s);
    // Value 2k (low nibble) in the low half of lane k, value 2k + 1 in its high half.
    _mm512_storeu_si512(out + g * kGroup,
                        _mm512_or_si512(_mm512_srli_epi32(_mm512_castps_si512(lo), 16),
                                        _mm512_and_si512(_mm512_castps_si512(hi), high_half)));
  }
}

// The bf16 bits of the sixteen e2m1 codes (and 16 unused entries).
const uint16_t* e2m1_values() {
  alignas(64) static const std::array<uint16_t, 32> table = [] {
    std::array<uint16_t, 32> t{};
    for (int c = 0; c < 16; ++c) {
      t[static_cast<size_t>(c)] = top_half(formats::e2m1_to_float(static_cast<uint8_t>(c)));
    }
    return t;
  }();
  return table.data();
}

// The same row by table: each group's values looked up, their exponent moved by the group's
// scale (UE8M0 code c: 2^(c - 127)) unless zero; a group whose scale would leave bf16's normal
// range (codes 0 .. 1, 253 .. 255) as e2m1_row_avx512 does it.
TS_AVX512_BW void e2m1_row_table(const uint8_t* w, int64_t in, const uint8_t* scales,
                                 uint16_t* out) {
  const __m512i table = _mm512_load_si512(e2m1_values());
  const __m512i nibble = _mm512_set1_epi32(0xF), magnitude = _mm512_set1_epi16(0x7FFF);
  for (int64_t g = 0; g < in / kGroup; ++g) {
    const int32_t e = static_cast<int32_t>(scales[g]) - 127;
    if (e < -125 || e > 125) {
      e2m1_row_avx512(w + g * 16, kGroup, scales + g, out + g * kGroup);
      continue;
    }
    _mm_prefetch(reinterpret_cast<const char*>(w + g * 16 + kAhead), _MM_HINT_T0);
    const __m512i v =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + g * 16)));
    // Code 2k (low nibble) in the low half of lane k, code 2k + 1 in its high half.
    const __m512i codes = _mm512_or_si512(_mm512_and_si512(v, nibble),
                                          _mm512_slli_epi32(_mm512_srli_epi32(v, 4), 16));
    __m512i bits = _mm512_permutexvar_epi16(codes, table);
    bits = _mm512_mask_add_epi16(bits, _mm512_test_epi16_mask(bits, magnitude), bits,
                                 _mm512_set1_epi16(static_cast<int16_t>(e * 128)));
    _mm512_storeu_si512(out + g * kGroup, bits);
  }
}

// ---- AVX2 ----

// 8 codes (the low half of `codes`) times s, as bf16 bits in the low half of 8 lanes.
TS_AVX2 __m256i e4m3_8(__m128i codes, __m256 s) {
  const __m256i low7 = _mm256_set1_epi32(0x7F);
  const __m256i v = _mm256_cvtepu8_epi32(codes);
  const __m256i mag = _mm256_and_si256(v, low7);
  const __m256 normal = _mm256_castsi256_ps(
      _mm256_add_epi32(_mm256_slli_epi32(mag, 20), _mm256_set1_epi32(120 << 23)));
  const __m256 subnormal = _mm256_mul_ps(_mm256_cvtepi32_ps(mag), _mm256_set1_ps(1.0f / 512.0f));
  const __m256 is_subnormal = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8), mag));
  const __m256 value = _mm256_mul_ps(_mm256_blendv_ps(normal, subnormal, is_subnormal), s);
  __m256i bits = _mm256_blendv_epi8(_mm256_castps_si256(value), _mm256_set1_epi32(0x7FC00000),
                                    _mm256_cmpeq_epi32(mag, low7));
  bits = _mm256_or_si256(bits, _mm256_slli_epi32(_mm256_srli_epi32(v, 7), 31));
  return _mm256_srli_epi32(bits, 16);
}

// One row's inputs [i0, i0 + count) with one scale; count % 16 == 0.
TS_AVX2 void e4m3_row_avx2(const uint8_t* w, int64_t count, float scale, uint16_t* out) {
  const __m256 s = _mm256_set1_ps(scale);
  for (int64_t i = 0; i < count; i += 16) {
    _mm_prefetch(reinterpret_cast<const char*>(w + i + kAhead), _MM_HINT_T0);
    const __m256i a = e4m3_8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + i)), s);
    const __m256i b = e4m3_8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + i + 8)), s);
    // packus interleaves the 128-bit lanes: a0-3 b0-3 a4-7 b4-7; the permute restores the order.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8));
  }
}

// 16 values from 8 bytes times s: value 2k in the low half of lane k, 2k + 1 in its high half.
TS_AVX2 __m256i e2m1_16(const uint8_t* w, __m256 s) {
  const __m256 magnitudes = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
  const __m256i sign_bit = _mm256_set1_epi32(8);
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w)));
  const __m256i h = _mm256_srli_epi32(v, 4);
  const __m256 lo = _mm256_mul_ps(
      _mm256_or_ps(_mm256_permutevar8x32_ps(magnitudes, v),
                   _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(v, sign_bit), 28))),
      s);
  const __m256 hi = _mm256_mul_ps(
      _mm256_or_ps(_mm256_permutevar8x32_ps(magnitudes, h),
                   _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(h, sign_bit), 28))),
      s);
  return _mm256_or_si256(_mm256_srli_epi32(_mm256_castps_si256(lo), 16),
                         _mm256_and_si256(_mm256_castps_si256(hi),
                                          _mm256_set1_epi32(static_cast<int32_t>(0xFFFF0000u))));
}

TS_AVX2 void e2m1_row_avx2(const uint8_t* w, int64_t in, const uint8_t* scales, uint16_t* out) {
  for (int64_t g = 0; g < in / kGroup; ++g) {
    _mm_prefetch(reinterpret_cast<const char*>(w + g * 16 + kAhead), _MM_HINT_T0);
    const __m256 s = _mm256_set1_ps(formats::ue8m0_to_float(scales[g]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + g * kGroup), e2m1_16(w + g * 16, s));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + g * kGroup + 16),
                        e2m1_16(w + g * 16 + 8, s));
  }
}

}  // namespace

void decode_fp8_tile(const uint8_t* w, const uint8_t* w_scale, int64_t in, int64_t o0, int64_t n,
                     uint16_t* out) {
  if (!linear_detail::use_own_kernel()) {
    fp8_scalar(w, w_scale, in, o0, 0, n, 0, in, out);
    return;
  }
  const int64_t blocks = (in + kBlock - 1) / kBlock, inputs = in / 16 * 16;
  const bool avx512 = linear_detail::avx512_kernel();
  for (int64_t j = 0; j < n; ++j) {
    const int64_t o = o0 + j;
    for (int64_t i = 0; i < inputs; i += kBlock) {
      const int64_t count = std::min(kBlock, inputs - i);
      const float s = formats::ue8m0_to_float(w_scale[o / kBlock * blocks + i / kBlock]);
      int32_t e = 0;
      if (avx512 && avx512_bw() && table_scales(s, e)) {
        e4m3_row_table(w + o * in + i, count, s, e, out + j * in + i);
      } else if (avx512) {
        e4m3_row_avx512(w + o * in + i, count, s, out + j * in + i);
      } else {
        e4m3_row_avx2(w + o * in + i, count, s, out + j * in + i);
      }
    }
  }
  fp8_scalar(w, w_scale, in, o0, 0, n, inputs, in, out);
}

void decode_fp4_tile(const uint8_t* w, const uint8_t* w_scale, int64_t in, int64_t o0, int64_t n,
                     uint16_t* out) {
  TS_CHECK(in % kGroup == 0, "decode_fp4_tile: in = {} is not a multiple of 32", in);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t o = o0 + j;
    const uint8_t* row = w + o * (in / 2);
    const uint8_t* scales = w_scale + o * (in / kGroup);
    if (linear_detail::avx512_kernel() && avx512_bw()) {
      e2m1_row_table(row, in, scales, out + j * in);
    } else if (linear_detail::avx512_kernel()) {
      e2m1_row_avx512(row, in, scales, out + j * in);
    } else if (linear_detail::use_own_kernel()) {
      e2m1_row_avx2(row, in, scales, out + j * in);
    } else {
      fp4_scalar(row, in, scales, out + j * in);
    }
  }
}

}  // namespace tessera::ops
