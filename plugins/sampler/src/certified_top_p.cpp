#include "certified_top_p.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <limits>

#include "compress_avx2.hpp"
#include "target_clones.hpp"  // TS_SAMPLER_CLONES: one clone per x86-64 level

namespace tessera::sampler {

void heavy_weights_tail(const float* w, int64_t i, int64_t n, float t, float* out, int32_t* columns,
                        HeavyPass& h) {
  for (; i < n; ++i) {
    if (w[i] >= t) {
      columns[h.count] = static_cast<int32_t>(i);
      out[h.count++] = w[i];
      h.mass += w[i];
    } else {
      h.max_below = std::max(h.max_below, w[i]);
    }
  }
}

// Portable version: a branch-free copy (the test is a coin toss on flat rows).
HeavyPass heavy_weights_portable(const float* w, int64_t n, float t, float* out, int32_t* columns,
                                 int64_t column_limit) {
  HeavyPass h;
  double mass[4] = {};
  for (int64_t i = 0; i < n; ++i) {
    const bool heavy = w[i] >= t;
    out[h.count] = w[i];
    if (h.count < column_limit) {
      columns[h.count] = static_cast<int32_t>(i);
    }
    h.count += heavy;
    mass[i & 3] += heavy ? static_cast<double>(w[i]) : 0.0;
    h.max_below = std::max(h.max_below, heavy ? 0.0f : w[i]);
  }
  h.mass = (mass[0] + mass[1]) + (mass[2] + mass[3]);
  return h;
}

#if defined(__x86_64__) && defined(__GNUC__)
// AVX-512: 16 weights per step, kept ones packed with a register compress (the store form is
// microcoded on AMD) and stored whole, so out needs 16 floats of slack.
static __attribute__((target("avx512f"))) HeavyPass heavy_weights_avx512(const float* w, int64_t n,
                                                                         float t, float* out,
                                                                         int32_t* columns,
                                                                         int64_t column_limit) {
  HeavyPass h;
  const __m512 threshold = _mm512_set1_ps(t);
  const __m512i sixteen = _mm512_set1_epi32(16);
  __m512i column = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512 below = _mm512_setzero_ps();
  __m512d mass_lo = _mm512_setzero_pd(), mass_hi = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(w + i);
    const __mmask16 heavy = _mm512_cmp_ps_mask(x, threshold, _CMP_GE_OQ);
    _mm512_storeu_ps(out + h.count, _mm512_maskz_compress_ps(heavy, x));
    if (h.count < column_limit) {
      _mm512_storeu_si512(columns + h.count, _mm512_maskz_compress_epi32(heavy, column));
    }
    column = _mm512_add_epi32(column, sixteen);
    h.count += __builtin_popcount(heavy);
    const __m512 kept = _mm512_maskz_mov_ps(heavy, x);
    mass_lo = _mm512_add_pd(mass_lo, _mm512_cvtps_pd(_mm512_castps512_ps256(kept)));
    mass_hi = _mm512_add_pd(
        mass_hi,
        _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(kept), 1))));
    below = _mm512_mask_max_ps(below, static_cast<__mmask16>(~heavy), below, x);
  }
  h.mass = _mm512_reduce_add_pd(_mm512_add_pd(mass_lo, mass_hi));
  h.max_below = _mm512_reduce_max_ps(below);
  heavy_weights_tail(w, i, n, t, out, columns, h);
  return h;
}

HeavyPass heavy_weights(const float* w, int64_t n, float t, float* out, int32_t* columns,
                        int64_t column_limit) {
  if (cpu_has_avx512f()) {
    return heavy_weights_avx512(w, n, t, out, columns, column_limit);
  }
  return cpu_has_avx2() ? heavy_weights_avx2(w, n, t, out, columns, column_limit)
                        : heavy_weights_portable(w, n, t, out, columns, column_limit);
}
#else
HeavyPass heavy_weights(const float* w, int64_t n, float t, float* out, int32_t* columns,
                        int64_t column_limit) {
  return heavy_weights_portable(w, n, t, out, columns, column_limit);
}
#endif

namespace {

// Positive floats order like their bit patterns. Level 1 buckets by the top 12 bits below the
// sign (8 exponent, 4 mantissa: each bucket a factor <= 2^(1/16) wide) over the 32 binades below
// the largest weight (exactly 1); everything smaller shares one tail bucket (its mass is < V 2^-32
// of the total: the boundary only lands there for top_p within ~1e-5 of 1, and then the row is
// left to the libm retry or the scalar path). Level 2 splits the boundary's bucket by the next 8
// bits.
constexpr int kBucketShift = 19;
constexpr uint32_t kLowestBucket = (127u - 32u) << 4;                // bucket of 2^-32
constexpr size_t kBuckets = ((127u + 1u) << 4) - kLowestBucket + 1;  // + the tail, index 0
constexpr int kSubShift = 11;
constexpr size_t kSubBuckets = 256;
constexpr size_t kCopies = TopPScratch::kCopies;
constexpr size_t kWeightsForCopies = 512;  // fewer weights: one histogram
// keep_heavy for at most 1/32 of a row heavy: its columns' stores and its one write per kept
// weight cost more than the two passes beyond (a 129k-token row at logit std 4, ~5% heavy, was
// 8-16% slower with 1/8).
constexpr int64_t kHeavyFractionForCut = 32;

// Weights are in [0, 1] (exp of a non-positive exponent); the clamp only keeps a stray larger one
// inside the array. Branch-free: a tail test would mispredict on every other weight of a peaked
// row.
size_t bucket_of(float w) {
  const auto k = static_cast<int32_t>(std::bit_cast<uint32_t>(w) >> kBucketShift) -
                 static_cast<int32_t>(kLowestBucket);
  return static_cast<size_t>(std::min(std::max(k, 0), static_cast<int32_t>(kBuckets) - 1));
}
size_t sub_bucket_of(float w) { return (std::bit_cast<uint32_t>(w) >> kSubShift) & 0xff; }

// GCC/clang vector extensions: 8 lanes, split into whatever registers the clone's target has.
using Floats8 = float __attribute__((vector_size(32)));
using Doubles8 = double __attribute__((vector_size(64)));
using Bits8 = uint32_t __attribute__((vector_size(32)));
using Ints8 = int32_t __attribute__((vector_size(32)));

// Level 1: the mass per bucket, in `copies` interleaved histograms `stride` doubles apart
// (consecutive weights of a flat row fall into the same bucket; one histogram would chain every
// add through memory; stride 0 is the one histogram a few weights use). The 8 weights of a step
// are widened and bucketed as vectors: the scalar widening GCC emits (vcvtss2sd from memory)
// merges into its destination register, which held the previous add's sum, so every add waited
// on the one before it, whatever its copy (~1.5 ns a weight on a flat 16k row; docs/perf.md
// "Top-p's widened weights").
TS_SAMPLER_CLONES void bucket_masses(const float* w, int64_t n, double* copies, size_t stride) {
  static_assert(kCopies == 8, "one copy per lane of a step");
  int64_t i = 0;
  for (; i + static_cast<int64_t>(kCopies) <= n; i += kCopies) {
    Floats8 x;
    std::memcpy(&x, w + i, sizeof x);
    const Doubles8 wide = __builtin_convertvector(x, Doubles8);
    Bits8 bits;
    std::memcpy(&bits, &x, sizeof bits);
    Ints8 k = reinterpret_cast<Ints8>(bits >> kBucketShift) - static_cast<int32_t>(kLowestBucket);
    k = k < 0 ? Ints8{} : k;  // bucket_of's clamp, lane by lane
    k = k > static_cast<int32_t>(kBuckets) - 1 ? static_cast<int32_t>(kBuckets) - 1 : k;
    for (size_t c = 0; c < kCopies; ++c) {
      copies[c * stride + static_cast<size_t>(k[c])] += wide[c];
    }
  }
  for (; i < n; ++i) {
    copies[bucket_of(w[i])] += w[i];
  }
}

// The smallest weight of level-1 bucket k >= 1.
float bucket_lower_bound(size_t k) {
  return std::bit_cast<float>(static_cast<uint32_t>(k + kLowestBucket) << kBucketShift);
}

// max(w[i] : w[i] < lo), 0 if none. In 8-lane vectors: GCC does not vectorise a float max
// reduction by itself (it would reorder it), though max is exact in any order.

TS_SAMPLER_CLONES float max_below(const float* w, int64_t n, float lo) {
  Floats8 lanes = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    Floats8 x;
    std::memcpy(&x, w + i, sizeof x);
    const Floats8 kept = x < lo ? x : Floats8{};
    lanes = lanes > kept ? lanes : kept;
  }
  float m = 0.0f;
  for (int j = 0; j < 8; ++j) {
    m = std::max(m, lanes[j]);
  }
  for (; i < n; ++i) {
    m = std::max(m, w[i] < lo ? w[i] : 0.0f);
  }
  return m;
}

}  // namespace

int64_t gather_between_portable(const float* w, int64_t n, float lo, float hi, float* out) {
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[kept] = w[i];
    kept += (w[i] >= lo) & (w[i] < hi);
  }
  return kept;
}

int64_t gather_between(const float* w, int64_t n, float lo, float hi, float* out) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) {
    return gather_between_avx2(w, n, lo, hi, out);
  }
#endif
  return gather_between_portable(w, n, lo, hi, out);
}

namespace {

// The fast boundary b: the weight at which the descending cumulative weight first reaches target
// (ties grouped), with what certification needs of the split it makes. b = 0 when rounding leaves
// the target unreached or the boundary lies in the tail bucket.
struct FastBoundary {
  float b = 0.0f;
  double kept_mass = 0.0;  // of A u B (w >= b)
  float c_max = 0.0f;      // the largest weight of C (w < b), 0 if none
};

FastBoundary fast_boundary(std::span<const float> weights, double target, TopPScratch& s) {
  FastBoundary out;
  // A peaked row's few heavy weights go into one histogram: clearing eight (34 KiB) cost more than
  // their adds (~7% of a 4096-token peaked row's top-p).
  const size_t copies = weights.size() >= kWeightsForCopies ? kCopies : 1;
  s.copies.assign(copies * kBuckets, 0.0);
  bucket_masses(weights.data(), static_cast<int64_t>(weights.size()), s.copies.data(),
                copies == 1 ? 0 : kBuckets);
  double above = 0.0;
  size_t k = kBuckets;
  double mass_k = 0.0;
  while (k-- > 1) {  // the tail (0) never holds the boundary here
    mass_k = 0.0;
    for (size_t c = 0; c < copies; ++c) {
      mass_k += s.copies[c * kBuckets + k];
    }
    if (above + mass_k >= target) {
      break;
    }
    above += mass_k;
  }
  if (k == 0) {
    return out;
  }

  // Level 2 over the bucket's weights [lo, hi); the largest weight below the bucket.
  const float lo = bucket_lower_bound(k);
  const float hi =
      k + 1 < kBuckets ? bucket_lower_bound(k + 1) : std::numeric_limits<float>::infinity();
  float below_max = max_below(weights.data(), static_cast<int64_t>(weights.size()), lo);
  if (s.bucket.size() < weights.size()) {
    s.bucket.resize(weights.size());  // room for all
  }
  const std::span<const float> bucket(
      s.bucket.data(),
      static_cast<size_t>(gather_between(weights.data(), static_cast<int64_t>(weights.size()), lo,
                                         hi, s.bucket.data())));
  s.sub_mass.assign(kSubBuckets, 0.0);
  for (const float w : bucket) {
    s.sub_mass[sub_bucket_of(w)] += w;
  }
  size_t k2 = kSubBuckets;
  while (k2-- > 0) {
    if (above + s.sub_mass[k2] >= target) {
      break;
    }
    above += s.sub_mass[k2];
  }
  if (k2 >= kSubBuckets) {
    return out;  // rounding: the bucket's mass differs from its parts
  }

  // The boundary's sub-bucket, sorted; what is below it inside the bucket for c_max.
  s.members.clear();
  for (const float w : bucket) {
    const size_t sub = sub_bucket_of(w);
    if (sub == k2) {
      s.members.push_back(w);
    } else if (sub < k2 && w > below_max) {
      below_max = w;
    }
  }
  std::sort(s.members.begin(), s.members.end(), std::greater<>());
  for (size_t i = 0; i < s.members.size();) {
    size_t j = i;  // the group of equal weights [i, j)
    double group = 0.0;
    for (; j < s.members.size() && s.members[j] == s.members[i]; ++j) {
      group += s.members[j];
    }
    if (above + group >= target) {
      out.b = s.members[i];
      out.kept_mass = above + group;
      out.c_max = j < s.members.size() ? s.members[j] : below_max;
      return out;
    }
    above += group;
    i = j;
  }
  return out;
}

TS_SAMPLER_CLONES void zero_below(float* w, int64_t n, float b) {
  for (int64_t i = 0; i < n; ++i) {
    w[i] = w[i] < b ? 0.0f : w[i];
  }
}

// The cut of a peaked row from its heavy weights alone, without a second pass over the row's
// weights (zeroing those < b, then summing the blocks: ~21% of a peaked 4096-token row): the row
// cleared, the kept weights (>= b, all of them heavy) put back at their columns, and each block's
// sum added up from them in column order. The block sums and the total round differently from
// sum_weight_blocks' tree, each within V 2^-53 of the total, which the draw's margin covers
// (certified_draw.hpp).
void keep_heavy(std::span<float> weights, float b, const float* heavy, const int32_t* columns,
                int64_t count, BlockWeights& sums) {
  std::fill(weights.begin(), weights.end(), 0.0f);
  std::fill(sums.block_sums.begin(), sums.block_sums.end(), 0.0);
  size_t block = 0;  // the columns ascend: each block's kept weights are consecutive here
  double sum = 0.0;
  for (int64_t j = 0; j < count; ++j) {
    if (heavy[j] >= b) {
      const auto column = static_cast<size_t>(columns[j]);
      const size_t column_block = column / static_cast<size_t>(kWeightBlock);
      weights[column] = heavy[j];
      if (column_block != block) {
        sums.block_sums[block] = sum;
        block = column_block;
        sum = 0.0;
      }
      sum += heavy[j];
    }
  }
  if (!sums.block_sums.empty()) {
    sums.block_sums[block] = sum;
  }
  double total = 0.0;
  for (const double block : sums.block_sums) {
    total += block;
  }
  sums.total = total;
}

}  // namespace

bool certified_top_p(std::span<float> weights, BlockWeights& sums, double top_p,
                     const WeightBound& bound, TopPScratch& scratch) {
  const double total = sums.total;
  const double target = top_p * total;
  // Peaked rows first: when the weights >= kHeavy already hold the target mass, the boundary is
  // among them and only they are searched (a trained model at T < 1 keeps tens of tokens).
  FastBoundary fb;
  if (scratch.heavy.size() < weights.size() + 16) {
    scratch.heavy.resize(weights.size() + 16);
  }
  if (scratch.heavy_columns.size() < weights.size() + 16) {
    scratch.heavy_columns.resize(weights.size() + 16);
  }
  const auto vocab_size = static_cast<int64_t>(weights.size());
  const int64_t cut_limit = vocab_size / kHeavyFractionForCut;
  const HeavyPass heavy = heavy_weights(weights.data(), vocab_size, kHeavy, scratch.heavy.data(),
                                        scratch.heavy_columns.data(), cut_limit);
  if (heavy.mass >= target) {
    fb = fast_boundary({scratch.heavy.data(), static_cast<size_t>(heavy.count)}, target, scratch);
    fb.c_max = std::max(fb.c_max, heavy.max_below);
  }
  const bool among_heavy = fb.b > 0.0f;  // b >= kHeavy: every kept weight is a heavy one
  if (!among_heavy) {
    fb = fast_boundary(weights, target, scratch);  // flat rows: everything
  }
  const float b = fb.b;
  if (!(b > 0.0f)) {
    return false;
  }
  const double kept_mass = fb.kept_mass;
  const float c_max = fb.c_max;
  const double d = bound.rel, a = bound.abs;
  // |A u B| <= V also bounds the kept set's absolute error terms (a = 2^-126 each: negligible).
  const auto vocab = static_cast<double>(weights.size());
  const double rounding = 4.0 * vocab * 0x1.0p-53 * total;
  const double total_error = d * total + vocab * a + rounding;
  const double kept_upper = kept_mass * (1.0 + d) + vocab * a + rounding;
  const double kept_lower = kept_mass * (1.0 - d) - vocab * a - rounding;
  const double b_lower = static_cast<double>(b) * (1.0 - d) - a;
  const bool separated = b_lower > static_cast<double>(c_max) * (1.0 + d) + a;  // (1)
  const bool enough = kept_lower >= top_p * (total + total_error);              // (2)
  const bool minimal = kept_upper - b_lower < top_p * (total - total_error);    // (3)
  if (!(separated && enough && minimal)) {
    return false;
  }
  // Few heavy weights only (kHeavyFractionForCut; a flat row's are all heavy).
  if (among_heavy && heavy.count <= cut_limit) {
    keep_heavy(weights, b, scratch.heavy.data(), scratch.heavy_columns.data(), heavy.count, sums);
    return true;
  }
  zero_below(weights.data(), static_cast<int64_t>(weights.size()), b);
  sum_weight_blocks(weights, sums);
  return true;
}

}  // namespace tessera::sampler
