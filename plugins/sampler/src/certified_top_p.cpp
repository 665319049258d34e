#include "certified_top_p.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>

#include "target_clones.hpp"  // TS_SAMPLER_CLONES: one clone per x86-64 level

namespace tessera::sampler {
namespace {

// Positive floats order like their bit patterns; the top 12 bits below the sign (8 exponent, 4
// mantissa) give 4096 buckets, each a factor <= 2^(1/16) wide.
constexpr int kBucketShift = 19;
constexpr size_t kTopPBuckets = size_t{1} << (31 - kBucketShift);

size_t bucket_of(float w) { return std::bit_cast<uint32_t>(w) >> kBucketShift; }

// The fast boundary b: the weight at which the descending cumulative weight first reaches target
// (ties grouped), with what certification needs of the split it makes, all from one pass over
// the weights (a histogram of mass, count and largest weight per bucket) and a sort of the one
// bucket the boundary falls in. b = 0 when rounding leaves the target unreached.
struct FastBoundary {
  float b = 0.0f;
  double kept_mass = 0.0;  // of A u B (w >= b)
  double n_kept = 0.0;     // |A u B|
  float c_max = 0.0f;      // the largest weight of C (w < b), 0 if none
};

FastBoundary fast_boundary(std::span<const float> weights, double target, TopPScratch& s) {
  s.bucket_mass.assign(kTopPBuckets, 0.0);
  s.bucket_count.assign(kTopPBuckets, 0);
  s.bucket_max.assign(kTopPBuckets, 0.0f);
  for (const float w : weights) {
    if (!(w > 0.0f)) continue;
    const size_t k = bucket_of(w);
    s.bucket_mass[k] += w;
    ++s.bucket_count[k];
    s.bucket_max[k] = std::max(s.bucket_max[k], w);
  }
  FastBoundary out;
  double above = 0.0, above_count = 0.0;
  size_t k = kTopPBuckets;
  while (k-- > 0) {
    if (above + s.bucket_mass[k] >= target) break;
    above += s.bucket_mass[k];
    above_count += s.bucket_count[k];
  }
  if (k >= kTopPBuckets) return out;  // wrapped: never reached
  s.bucket.clear();
  for (const float w : weights) {
    if (w > 0.0f && bucket_of(w) == k) s.bucket.push_back(w);
  }
  std::sort(s.bucket.begin(), s.bucket.end(), std::greater<>());
  for (size_t i = 0; i < s.bucket.size();) {
    size_t j = i;  // the group of equal weights [i, j)
    double group = 0.0;
    for (; j < s.bucket.size() && s.bucket[j] == s.bucket[i]; ++j) group += s.bucket[j];
    if (above + group >= target) {
      out.b = s.bucket[i];
      out.kept_mass = above + group;
      out.n_kept = above_count + static_cast<double>(j);
      if (j < s.bucket.size()) {
        out.c_max = s.bucket[j];  // the next smaller weight, same bucket
      } else {
        for (size_t lower = k; lower-- > 0;) {  // else the highest non-empty bucket below
          if (s.bucket_count[lower] > 0) {
            out.c_max = s.bucket_max[lower];
            break;
          }
        }
      }
      return out;
    }
    above += group;
    i = j;
  }
  return out;
}

TS_SAMPLER_CLONES void zero_below(float* w, int64_t n, float b) {
  for (int64_t i = 0; i < n; ++i) w[i] = w[i] < b ? 0.0f : w[i];
}

}  // namespace

bool certified_top_p(std::span<float> weights, BlockWeights& sums, double top_p,
                     TopPScratch& scratch) {
  const double total = sums.total;
  const FastBoundary fb = fast_boundary(weights, top_p * total, scratch);
  const float b = fb.b;
  if (!(b > 0.0f)) return false;
  const double kept_mass = fb.kept_mass, n_kept = fb.n_kept;
  const float c_max = fb.c_max;
  const double d = kWeightRelError, a = kWeightAbsError;
  const auto vocab = static_cast<double>(weights.size());
  const double rounding = 4.0 * vocab * 0x1.0p-53 * total;
  const double total_error = d * total + vocab * a + rounding;
  const double kept_upper = kept_mass * (1.0 + d) + n_kept * a + rounding;
  const double kept_lower = kept_mass * (1.0 - d) - n_kept * a - rounding;
  const double b_lower = static_cast<double>(b) * (1.0 - d) - a;
  const bool separated = b_lower > static_cast<double>(c_max) * (1.0 + d) + a;  // (1)
  const bool enough = kept_lower >= top_p * (total + total_error);              // (2)
  const bool minimal = kept_upper - b_lower < top_p * (total - total_error);    // (3)
  if (!(separated && enough && minimal)) return false;
  zero_below(weights.data(), static_cast<int64_t>(weights.size()), b);
  sum_weight_blocks(weights, sums);
  return true;
}

}  // namespace tessera::sampler
