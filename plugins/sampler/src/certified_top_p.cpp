#include "certified_top_p.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>

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

}  // namespace

bool certified_top_p(std::span<float> weights, BlockWeights& sums, double top_p,
                     TopPScratch& scratch) {
  const double total = sums.total;
  const float b = fast_boundary(weights, top_p * total, scratch);
  if (!(b > 0.0f)) return false;
  // A u B's mass (4 interleaved sums: independent add chains), its size, and C's largest weight.
  double kept_lanes[4] = {0.0, 0.0, 0.0, 0.0};
  double n_kept = 0.0;
  float c_max = 0.0f;
  for (size_t i = 0; i < weights.size(); ++i) {
    const float w = weights[i];
    if (w >= b) {
      kept_lanes[i % 4] += w;
      n_kept += 1.0;
    } else if (w > c_max) {
      c_max = w;
    }
  }
  const double kept_mass = (kept_lanes[0] + kept_lanes[1]) + (kept_lanes[2] + kept_lanes[3]);
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
  for (float& w : weights) {
    if (w < b) w = 0.0f;
  }
  sum_weight_blocks(weights, sums);
  return true;
}

}  // namespace tessera::sampler
