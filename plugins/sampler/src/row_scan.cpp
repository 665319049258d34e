#include "row_scan.hpp"

#include <bit>
#include <cstring>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <limits>

#include "target_clones.hpp"  // TS_SAMPLER_CLONES: one clone per x86-64 level

namespace tessera::sampler {
namespace {

// GCC/clang vector extensions: 8 floats, split into whatever registers the clone's target has
// (GCC 12 lowers a 64-byte ?: to scalars even with AVX-512, so 32 bytes it is).
using Floats = float __attribute__((vector_size(32)));
using Ints = int32_t __attribute__((vector_size(32)));
constexpr size_t kLanes = 8;
constexpr int32_t kExponentMask = 0x7f800000;  // all ones: inf or NaN

bool is_bad(float x) { return (std::bit_cast<int32_t>(x) & kExponentMask) == kExponentMask; }

// Blocks of kUnroll vectors: independent accumulators, so no iteration waits for the previous
// one's max (the result is the same in any order: max and "any bad" are exact).
constexpr size_t kUnroll = 4;
constexpr size_t kStep = kLanes * kUnroll;

[[gnu::always_inline]] inline Floats load(const float* p) {
  Floats x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

[[gnu::always_inline]] inline bool any_set(Ints m) {
  uint64_t parts[sizeof m / sizeof(uint64_t)];
  std::memcpy(parts, &m, sizeof m);
  uint64_t any = 0;
  for (const uint64_t p : parts) {
    any |= p;
  }
  return any != 0;
}

}  // namespace

TS_SAMPLER_CLONES RowMaxFinite scan_row_portable(std::span<const float> logits) {
  const float* v = logits.data();
  const size_t n = logits.size();
  const float minus_inf = -std::numeric_limits<float>::infinity();
  Floats lanes[kUnroll];
  Ints bad[kUnroll];
  for (size_t u = 0; u < kUnroll; ++u) {
    lanes[u] = Floats{} + minus_inf;
    bad[u] = Ints{};
  }
  size_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    for (size_t u = 0; u < kUnroll; ++u) {
      const Floats x = load(v + i + u * kLanes);
      lanes[u] = lanes[u] > x ? lanes[u] : x;
      Ints bits;
      std::memcpy(&bits, &x, sizeof bits);
      bad[u] |= (bits & kExponentMask) == kExponentMask;  // -1 where inf or NaN
    }
  }
  float max = minus_inf;
  bool any_bad = false;
  for (size_t u = 0; u < kUnroll; ++u) {
    for (size_t j = 0; j < kLanes; ++j) {
      max = max > lanes[u][j] ? max : lanes[u][j];
    }
    any_bad = any_bad || any_set(bad[u]);
  }
  for (; i < n; ++i) {
    max = max > v[i] ? max : v[i];
    any_bad = any_bad || is_bad(v[i]);
  }
  return RowMaxFinite{max, !any_bad};
}

TS_SAMPLER_CLONES int32_t first_index_of_portable(std::span<const float> values, float value) {
  const float* v = values.data();
  const size_t n = values.size();
  size_t i = 0;
  // Blocks of kStep: one vector "any equal" test, then the exact position inside the hit block.
  for (; i + kStep <= n; i += kStep) {
    Ints eq = load(v + i) == value;
    for (size_t u = 1; u < kUnroll; ++u) {
      eq |= load(v + i + u * kLanes) == value;
    }
    if (any_set(eq)) {
      break;
    }
  }
  for (; i < n; ++i) {
    if (v[i] == value) {
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

#if defined(__x86_64__) && defined(__GNUC__)
// AVX-512: 64 values per step in four independent accumulators. A value is inf or NaN exactly
// when its bits without the sign are >= 0x7f800000, so an unsigned max of those bits replaces
// the portable version's compare-and-or (the max itself ignores NaNs: the row is then rejected).
static __attribute__((target("avx512f"))) RowMaxFinite scan_row_avx512(const float* v, size_t n) {
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
  __m512 max[4];
  __m512i bits[4];
  for (int u = 0; u < 4; ++u) {
    max[u] = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    bits[u] = _mm512_setzero_si512();
  }
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int u = 0; u < 4; ++u) {
      const __m512 x = _mm512_loadu_ps(v + i + size_t{16} * u);
      max[u] = _mm512_max_ps(max[u], x);
      bits[u] = _mm512_max_epu32(bits[u], _mm512_and_si512(_mm512_castps_si512(x), magnitude));
    }
  }
  for (; i < n; i += 16) {  // the tail, masked
    const auto lanes = static_cast<__mmask16>(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(lanes, v + i);  // lanes past the end: +0, bits 0
    max[0] = _mm512_mask_max_ps(max[0], lanes, max[0], x);
    bits[0] = _mm512_max_epu32(bits[0], _mm512_and_si512(_mm512_castps_si512(x), magnitude));
  }
  const __m512 m = _mm512_max_ps(_mm512_max_ps(max[0], max[1]), _mm512_max_ps(max[2], max[3]));
  const __m512i b =
      _mm512_max_epu32(_mm512_max_epu32(bits[0], bits[1]), _mm512_max_epu32(bits[2], bits[3]));
  return RowMaxFinite{_mm512_reduce_max_ps(m),
                      static_cast<uint32_t>(_mm512_reduce_max_epu32(b)) < uint32_t{kExponentMask}};
}

static __attribute__((target("avx512f"))) int32_t first_index_of_avx512(const float* v, size_t n,
                                                                        float value) {
  const __m512 target = _mm512_set1_ps(value);
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __mmask16 e0 = _mm512_cmp_ps_mask(_mm512_loadu_ps(v + i), target, _CMP_EQ_OQ);
    const __mmask16 e1 = _mm512_cmp_ps_mask(_mm512_loadu_ps(v + i + 16), target, _CMP_EQ_OQ);
    const __mmask16 e2 = _mm512_cmp_ps_mask(_mm512_loadu_ps(v + i + 32), target, _CMP_EQ_OQ);
    const __mmask16 e3 = _mm512_cmp_ps_mask(_mm512_loadu_ps(v + i + 48), target, _CMP_EQ_OQ);
    const uint64_t hits = e0 | (uint64_t{e1} << 16) | (uint64_t{e2} << 32) | (uint64_t{e3} << 48);
    if (hits != 0) {
      return static_cast<int32_t>(i + std::countr_zero(hits));
    }
  }
  for (; i < n; ++i) {
    if (v[i] == value) {
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

RowMaxFinite scan_row(std::span<const float> logits) {
  return cpu_has_avx512f() ? scan_row_avx512(logits.data(), logits.size())
                           : scan_row_portable(logits);
}

int32_t first_index_of(std::span<const float> values, float value) {
  return cpu_has_avx512f() ? first_index_of_avx512(values.data(), values.size(), value)
                           : first_index_of_portable(values, value);
}
#else
RowMaxFinite scan_row(std::span<const float> logits) { return scan_row_portable(logits); }
int32_t first_index_of(std::span<const float> values, float value) {
  return first_index_of_portable(values, value);
}
#endif

}  // namespace tessera::sampler
