// Top-p (nucleus) on fast weights (exp_weights.hpp), certified to keep exactly the tokens the
// scalar path keeps (truncation.cpp: libm expf weights, the boundary b where the descending
// cumulative weight first reaches top_p * total, every weight < b dropped).
//
// The fast boundary b splits the fast weights into A (> b), B (== b) and C (< b). With the
// per-weight bound |e_i - f_i| <= d f_i + a (exp_weights.hpp) and the rounding of either path's
// double sums (< 4 V 2^-53 T), libm's weights keep exactly A u B when
//   (1) every weight of A u B stays above every weight of C: b (1 - d) - a > c_max (1 + d) + a;
//   (2) A u B holds at least top_p of the mass: lower(A u B) >= top_p * upper(T);
//   (3) A u B without its smallest weight holds less: upper(A u B) - lower(b) < top_p * lower(T).
// Tokens with equal logits get equal weights on both paths, so ties never break (1). When a
// condition fails (close calls; rare on flat rows, ~never on peaked ones) the caller runs the
// scalar path. The boundary is found from a two-level histogram of the weights' float bits
// (monotonic for positive floats) and a sort of the few weights of the one level-2 bucket it falls
// in: O(V) instead of a quickselect.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "exp_weights.hpp"

namespace tessera::sampler {

struct TopPScratch {
  static constexpr size_t kCopies = 8;
  std::vector<double> copies;    // [kCopies, buckets] mass per level-1 bucket, interleaved copies
  std::vector<double> sub_mass;  // [256] mass per level-2 bucket of the boundary's bucket
  std::vector<float> bucket;     // the weights of the boundary's level-1 bucket
  std::vector<float> members;    // the weights of its level-2 bucket holding the boundary
  std::vector<float> heavy;      // the weights >= 2^-16 (peaked rows search only these)
  std::vector<int32_t> heavy_columns;  // their columns
};

// Weights >= kHeavy (2^-16 of the largest, which is 1): a peaked row's top-p boundary is among
// them whenever they hold the target mass, and only they are searched then.
inline constexpr float kHeavy = 0x1.0p-16f;

struct HeavyPass {
  int64_t count = 0;       // weights >= t, copied in order to out, their columns to columns
  double mass = 0.0;       // their sum
  float max_below = 0.0f;  // the largest weight < t (0 if none)
};

// out, columns: room for n + 16 values each. The columns are written while fewer than
// column_limit weights are kept, so all of them whenever count <= column_limit (a flat row's many
// heavy weights need none, and their stores cost ~5% of its top-p). heavy_weights picks the
// AVX-512 version where the CPU has it, else the AVX2 one (compress_avx2.hpp) where it has that.
HeavyPass heavy_weights(const float* w, int64_t n, float t, float* out, int32_t* columns,
                        int64_t column_limit);
HeavyPass heavy_weights_portable(const float* w, int64_t n, float t, float* out, int32_t* columns,
                                 int64_t column_limit);
// The vector versions' last weights [i, n), one at a time, added to h.
void heavy_weights_tail(const float* w, int64_t i, int64_t n, float t, float* out, int32_t* columns,
                        HeavyPass& h);

// Copies the weights in [lo, hi) to out (room for n), in order, without a branch per weight (a
// flat row's bucket test is a coin toss); returns how many. gather_between picks the AVX2
// version where the CPU has it.
int64_t gather_between(const float* w, int64_t n, float lo, float hi, float* out);
int64_t gather_between_portable(const float* w, int64_t n, float lo, float hi, float* out);

// weights: [vocab] fast weights (0: removed), sums: their block sums; top_p in (0, 1). On success
// zeroes every weight the scalar path drops, recomputes the block sums and returns true; returns
// false (weights untouched) when the kept set cannot be certified.
[[nodiscard]] bool certified_top_p(std::span<float> weights, BlockWeights& sums, double top_p,
                                   const WeightBound& bound, TopPScratch& scratch);

}  // namespace tessera::sampler
