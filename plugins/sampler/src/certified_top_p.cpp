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

// The fast boundary: the weight at which the descending cumulative weight first reaches target
// (ties grouped). Returns 0 when rounding leaves the target unreached.
float fast_boundary(std::span<const float> weights, double target, TopPScratch& s) {
  s.bucket_mass.assign(kTopPBuckets, 0.0);
  for (const float w : weights) {
    if (w > 0.0f) s.bucket_mass[bucket_of(w)] += w;
  }
  double above = 0.0;
  size_t k = kTopPBuckets;
  while (k-- > 0) {
    if (above + s.bucket_mass[k] >= target) break;
    above += s.bucket_mass[k];
  }
  if (k >= kTopPBuckets) return 0.0f;  // wrapped: never reached
  s.bucket.clear();
  for (const float w : weights) {
    if (w > 0.0f && bucket_of(w) == k) s.bucket.push_back(w);
  }
  std::sort(s.bucket.begin(), s.bucket.end(), std::greater<>());
  for (size_t i = 0; i < s.bucket.size();) {
    size_t j = i;  // the group of equal weights [i, j)
    double group = 0.0;
    for (; j < s.bucket.size() && s.bucket[j] == s.bucket[i]; ++j) group += s.bucket[j];
    if (above + group >= target) return s.bucket[i];
    above += group;
    i = j;
  }
  return 0.0f;
}

struct KeptStats {
  double mass = 0.0;   // of A u B (w >= b)
  double count = 0.0;  // |A u B|
  float c_max = 0.0f;  // the largest weight of C (w < b), 0 if none
};

// Branch-free (the comparisons fall randomly on flat rows), 8 interleaved sums: vectorised.
TS_SAMPLER_CLONES KeptStats kept_stats(const float* w, int64_t n, float b) {
  constexpr int64_t kLanes = 8;
  double mass[kLanes] = {}, count[kLanes] = {};
  float c_max[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t k = 0; k < kLanes; ++k) {
      const float x = w[i + k];
      const bool kept = x >= b;
      mass[k] += kept ? x : 0.0f;
      count[k] += kept ? 1.0 : 0.0;
      c_max[k] = std::max(c_max[k], kept ? 0.0f : x);
    }
  }
  KeptStats s;
  for (; i < n; ++i) {
    const bool kept = w[i] >= b;
    s.mass += kept ? w[i] : 0.0f;
    s.count += kept ? 1.0 : 0.0;
    s.c_max = std::max(s.c_max, kept ? 0.0f : w[i]);
  }
  for (int64_t k = 0; k < kLanes; ++k) {
    s.mass += mass[k];
    s.count += count[k];
    s.c_max = std::max(s.c_max, c_max[k]);
  }
  return s;
}

TS_SAMPLER_CLONES void zero_below(float* w, int64_t n, float b) {
  for (int64_t i = 0; i < n; ++i) w[i] = w[i] < b ? 0.0f : w[i];
}

}  // namespace

bool certified_top_p(std::span<float> weights, BlockWeights& sums, double top_p,
                     TopPScratch& scratch) {
  const double total = sums.total;
  const float b = fast_boundary(weights, top_p * total, scratch);
  if (!(b > 0.0f)) return false;
  const auto n = static_cast<int64_t>(weights.size());
  const KeptStats kept = kept_stats(weights.data(), n, b);
  const double kept_mass = kept.mass, n_kept = kept.count;
  const float c_max = kept.c_max;
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
  zero_below(weights.data(), n, b);
  sum_weight_blocks(weights, sums);
  return true;
}

}  // namespace tessera::sampler
