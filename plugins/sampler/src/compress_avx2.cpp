#include "compress_avx2.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <algorithm>
#include <array>

namespace tessera::sampler {
namespace {

#define TS_AVX2_TARGET __attribute__((target("avx2,fma,popcnt")))

// kPackIndices[m]: the lanes set in the 8-bit mask m, lowest first, one byte each (the unused
// high bytes 0): the permute indices that move the kept floats to the low lanes, in order.
constexpr std::array<uint64_t, 256> pack_indices() {
  std::array<uint64_t, 256> table{};
  for (uint32_t m = 0; m < 256; ++m) {
    uint64_t indices = 0;
    int kept = 0;
    for (uint32_t lane = 0; lane < 8; ++lane) {
      if ((m >> lane) & 1u) {
        indices |= uint64_t{lane} << (8 * kept++);
      }
    }
    table[m] = indices;
  }
  return table;
}
constexpr std::array<uint64_t, 256> kPackIndices = pack_indices();

// x's lanes set in mask, packed to the low lanes (the rest: copies of lane 0, overwritten by the
// next store).
TS_AVX2_TARGET inline __m256i pack_order(int mask) {
  const __m128i bytes =
      _mm_cvtsi64_si128(static_cast<int64_t>(kPackIndices[static_cast<size_t>(mask)]));
  return _mm256_cvtepu8_epi32(bytes);
}
TS_AVX2_TARGET inline __m256 pack(__m256 x, int mask) {
  return _mm256_permutevar8x32_ps(x, pack_order(mask));
}

}  // namespace

TS_AVX2_TARGET HeavyPass heavy_weights_avx2(const float* w, int64_t n, float t, float* out,
                                            int32_t* columns, int64_t column_limit) {
  HeavyPass h;
  const __m256 threshold = _mm256_set1_ps(t);
  const __m256i eight = _mm256_set1_epi32(8);
  __m256i column = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 below = _mm256_setzero_ps();  // weights are >= 0: a dropped lane's 0 changes no max
  __m256d mass_lo = _mm256_setzero_pd(), mass_hi = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(w + i);
    const __m256 heavy = _mm256_cmp_ps(x, threshold, _CMP_GE_OQ);
    const int mask = _mm256_movemask_ps(heavy);
    const __m256i order = pack_order(mask);
    _mm256_storeu_ps(out + h.count, _mm256_permutevar8x32_ps(x, order));  // h.count <= i
    if (h.count < column_limit) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(columns + h.count),
                          _mm256_permutevar8x32_epi32(column, order));
    }
    column = _mm256_add_epi32(column, eight);
    h.count += __builtin_popcount(static_cast<unsigned>(mask));
    const __m256 kept = _mm256_and_ps(heavy, x);
    mass_lo = _mm256_add_pd(mass_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(kept)));
    mass_hi = _mm256_add_pd(mass_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(kept, 1)));
    below = _mm256_max_ps(below, _mm256_andnot_ps(heavy, x));
  }
  alignas(32) double mass[4];
  _mm256_store_pd(mass, _mm256_add_pd(mass_lo, mass_hi));
  h.mass = (mass[0] + mass[1]) + (mass[2] + mass[3]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, below);
  h.max_below = *std::max_element(lanes, lanes + 8);
  heavy_weights_tail(w, i, n, t, out, columns, h);
  return h;
}

TS_AVX2_TARGET int64_t gather_between_avx2(const float* w, int64_t n, float lo, float hi,
                                           float* out) {
  const __m256 low = _mm256_set1_ps(lo), high = _mm256_set1_ps(hi);
  int64_t kept = 0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(w + i);
    const int mask = _mm256_movemask_ps(
        _mm256_and_ps(_mm256_cmp_ps(x, low, _CMP_GE_OQ), _mm256_cmp_ps(x, high, _CMP_LT_OQ)));
    _mm256_storeu_ps(out + kept, pack(x, mask));  // kept <= i: the 8 floats end inside out's n
    kept += __builtin_popcount(static_cast<unsigned>(mask));
  }
  for (; i < n; ++i) {
    out[kept] = w[i];
    kept += (w[i] >= lo) & (w[i] < hi);
  }
  return kept;
}

}  // namespace tessera::sampler
#endif
