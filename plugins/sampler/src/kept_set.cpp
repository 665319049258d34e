#include "kept_set.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "fma_exp.hpp"
#include "group_scan.hpp"
#include "rejection_draw.hpp"  // tree_sum
#include "target_clones.hpp"   // TS_SAMPLER_CLONES: one clone per x86-64 level

namespace tessera::sampler {
namespace {

constexpr int64_t kLanes = TS_LOGIT_GROUP_LANES;
constexpr int64_t kBlock = TS_LOGIT_GROUP_BLOCK;
// fma_exp_bound is at most this factor above fma_exp_weight, and 0 where the weight is 0
// (SamplerFmaExp.BoundsHaveTheDefinitionsBitsAndLieAboveEveryWeightBelow): bound / it <= weight.
constexpr double kBoundOverWeight = 1.0625;
// How far ahead a pass over the whole row asks for its blocks: ~3 KiB.
constexpr int64_t kBlocksAhead = 3;
static_assert(kLanes == 16, "the lanes are two 8-double vectors");

using Doubles8 = double __attribute__((vector_size(64)));
using Floats8 = float __attribute__((vector_size(32)));
using Floats16 = float __attribute__((vector_size(64)));

// 16 double lanes: lo holds lanes 0-7, hi lanes 8-15 (BlockLanes' arrays, as vectors).
struct Lanes {
  Doubles8 lo{};
  Doubles8 hi{};
};

// The last, partial block's logits in a full block's room: the missing columns at l, so that no
// pass counts them above l (their weights and bounds are 0).
const float* padded_block(const float* x, int64_t columns, float l, float (&room)[kBlock]) {
  std::fill(room, room + kBlock, l);
  std::copy_n(x, columns, room);
  return room;
}

// One full block's 256 columns added to the lanes, 16 at a time (column lane + 16 k goes to
// lane `lane`, in k order): every weight to all, those whose logit is above l to above. A masked
// add leaves a lane's sum as it is (x + 0 = x for the sums' x >= +0), as leaving the term out does.
TS_SAMPLER_CLONES void add_block_clones(const float* __restrict logits, const float* __restrict w,
                                        float l, BlockLanes& lanes) {
  Lanes a;
  Lanes b;
  std::memcpy(&a.lo, lanes.all, sizeof a.lo);
  std::memcpy(&a.hi, lanes.all + 8, sizeof a.hi);
  std::memcpy(&b.lo, lanes.above, sizeof b.lo);
  std::memcpy(&b.hi, lanes.above + 8, sizeof b.hi);
  const Floats8 bar = Floats8{} + l;
  const Floats8 zero{};
  for (int64_t k = 0; k < kBlock; k += kLanes) {
    Floats8 w0;
    Floats8 w1;
    Floats8 l0;
    Floats8 l1;
    std::memcpy(&w0, w + k, sizeof w0);
    std::memcpy(&w1, w + k + 8, sizeof w1);
    std::memcpy(&l0, logits + k, sizeof l0);
    std::memcpy(&l1, logits + k + 8, sizeof l1);
    const Floats8 m0 = l0 > bar ? w0 : zero;
    const Floats8 m1 = l1 > bar ? w1 : zero;
    a.lo += __builtin_convertvector(w0, Doubles8);
    a.hi += __builtin_convertvector(w1, Doubles8);
    b.lo += __builtin_convertvector(m0, Doubles8);
    b.hi += __builtin_convertvector(m1, Doubles8);
  }
  std::memcpy(lanes.all, &a.lo, sizeof a.lo);
  std::memcpy(lanes.all + 8, &a.hi, sizeof a.hi);
  std::memcpy(lanes.above, &b.lo, sizeof b.lo);
  std::memcpy(lanes.above + 8, &b.hi, sizeof b.hi);
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same adds in AVX-512: eight floats widened by one instruction (GCC split the portable
// version's widening into halves and inserts), the logits compared sixteen at a time, the
// above-l adds masked (a lane left out keeps its sum, as adding +0 would).
__attribute__((target("avx512f"))) void add_block_avx512(const float* __restrict logits,
                                                         const float* __restrict w, float l,
                                                         BlockLanes& lanes) {
  __m512d a_lo = _mm512_loadu_pd(lanes.all);
  __m512d a_hi = _mm512_loadu_pd(lanes.all + 8);
  __m512d b_lo = _mm512_loadu_pd(lanes.above);
  __m512d b_hi = _mm512_loadu_pd(lanes.above + 8);
  const __m512 bar = _mm512_set1_ps(l);
  for (int64_t k = 0; k < kBlock; k += kLanes) {
    const __mmask16 up = _mm512_cmp_ps_mask(_mm512_loadu_ps(logits + k), bar, _CMP_GT_OQ);
    const __m512d w_lo = _mm512_cvtps_pd(_mm256_loadu_ps(w + k));
    const __m512d w_hi = _mm512_cvtps_pd(_mm256_loadu_ps(w + k + 8));
    a_lo = _mm512_add_pd(a_lo, w_lo);
    a_hi = _mm512_add_pd(a_hi, w_hi);
    b_lo = _mm512_mask_add_pd(b_lo, static_cast<__mmask8>(up), b_lo, w_lo);
    b_hi = _mm512_mask_add_pd(b_hi, static_cast<__mmask8>(up >> 8), b_hi, w_hi);
  }
  _mm512_storeu_pd(lanes.all, a_lo);
  _mm512_storeu_pd(lanes.all + 8, a_hi);
  _mm512_storeu_pd(lanes.above, b_lo);
  _mm512_storeu_pd(lanes.above + 8, b_hi);
}
#endif

// Float sums of the weights' upper bounds (fma_exp_bounds), four accumulators of 16 lanes each:
// every bound in all, those whose logit is above l in above. Any order (bound_keeps allows for
// their rounding); the four keep the adds' latency out of the way.
struct BoundSums {
  Floats16 all[4]{};
  Floats16 above[4]{};
};

TS_SAMPLER_CLONES void add_bound_block(const float* __restrict logits,
                                       const float* __restrict bounds, float l, BoundSums& sums) {
  BoundSums t = sums;
  const Floats16 bar = Floats16{} + l;
  const Floats16 zero{};
  for (int64_t k = 0; k < kBlock; k += 4 * kLanes) {
    for (int64_t q = 0; q < 4; ++q) {
      Floats16 e;
      Floats16 x;
      std::memcpy(&e, bounds + k + q * kLanes, sizeof e);
      std::memcpy(&x, logits + k + q * kLanes, sizeof x);
      t.all[q] += e;
      t.above[q] += x > bar ? e : zero;
    }
  }
  sums = t;
}

double sum_of(const Floats16 (&v)[4]) {
  double sum = 0.0;
  for (const Floats16& a : v) {
    for (int64_t lane = 0; lane < kLanes; ++lane) {
      sum += static_cast<double>(a[lane]);
    }
  }
  return sum;
}

}  // namespace

void add_block_lanes_portable(const float* logits, const float* w, float l, BlockLanes& lanes) {
  add_block_clones(logits, w, l, lanes);
}

void add_block_lanes(const float* logits, const float* w, float l, BlockLanes& lanes) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx512f()) {
    add_block_avx512(logits, w, l, lanes);
    return;
  }
#endif
  add_block_clones(logits, w, l, lanes);
}

KeptSet::KeptSet(std::span<const float> logits, std::span<const float> group_max, float l_max,
                 float temperature, float top_p, float min_p,
                 const std::vector<double>& block_prefix, KeptSetScratch& scratch)
    : logits_(logits),
      group_max_(group_max),
      block_prefix_(block_prefix),
      l_max_(l_max),
      temperature_(temperature),
      top_p_(static_cast<double>(top_p)),
      min_p_weight_(static_cast<double>(min_p) *
                    static_cast<double>(fma_exp_weight(l_max, l_max, temperature))),
      s_(scratch) {
  const auto blocks =
      static_cast<size_t>(logit_group_count(static_cast<int64_t>(logits.size())) / kLanes);
  if (top_p < 1.0f) {
    s_.computed.assign(blocks, 0);
    if (s_.weights.size() < blocks * kBlock) {
      s_.weights.resize(blocks * kBlock);
    }
  }
}

bool KeptSet::keeps(int64_t j) {
  const float l = logits_[static_cast<size_t>(j)];
  if (min_p_weight_ > 0.0 &&
      static_cast<double>(fma_exp_weight(l, l_max_, temperature_)) < min_p_weight_) {
    return false;
  }
  return top_p_ >= 1.0 || top_p_keeps(l);
}

bool KeptSet::top_p_keeps(float l) {
  if (l >= lowest_kept_ || l == l_max_) {  // nothing above the max: A = 0
    return true;
  }
  if (l <= highest_dropped_) {
    return false;
  }
  bool kept = false;
  if (threshold_ >= 0.0) {
    kept = totals(l, l).above < threshold_;
  } else if (mostly_above(l) && bound_keeps(l)) {
    kept = true;
  } else {
    kept = exact_keeps(l);
  }
  if (kept) {
    lowest_kept_ = std::min(lowest_kept_, l);
  } else {
    highest_dropped_ = std::max(highest_dropped_, l);
  }
  return kept;
}

bool KeptSet::exact_keeps(float l) {
  // The blocks above l, then those above two lower floors, then every block: each round's W' (the
  // lanes of the blocks visited) keeps j when A < fl(p W'), and W' plus the group bounds of the
  // blocks left out (the envelope's, >= their weights) drops it when A >= p (W' + U) (1 + 2^-30),
  // the factor covering both sums' rounding (< 2^-34 relative) and fl(p W)'s.
  const float t = temperature_;
  for (const float floor : {l, l - 4.0f * t, l - 12.0f * t}) {
    const LaneTotals some = totals(l, floor);
    if (some.every_block) {
      threshold_ = top_p_ * some.all;
      return some.above < threshold_;
    }
    if (some.above < top_p_ * some.all) {
      return true;
    }
    if (some.above >= top_p_ * (some.all + some.rest_bound) * (1.0 + 0x1.0p-30)) {
      return false;
    }
  }
  const LaneTotals every = totals(l, -std::numeric_limits<float>::infinity());
  threshold_ = top_p_ * every.all;
  return every.above < threshold_;
}

bool KeptSet::mostly_above(float l) {
  const std::vector<float>& block_max = block_maxima();
  const auto above =
      std::count_if(block_max.begin(), block_max.end(), [l](float m) { return m > l; });
  return 4 * above >= 3 * static_cast<int64_t>(block_max.size());
}

bool KeptSet::bound_keeps(float l) {
  const auto vocab = static_cast<int64_t>(logits_.size());
  const auto blocks = static_cast<int64_t>(group_max_.size()) / kLanes;
  BoundSums sums;
  float bounds[kBlock];
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t columns = std::min(kBlock, vocab - b * kBlock);
    const float* x = logits_.data() + b * kBlock;
    if (b + kBlocksAhead < blocks) {
      prefetch_logit_block(logits_, b + kBlocksAhead);
    }
    fma_exp_bounds(x, columns, l_max_, temperature_, bounds);
    float room[kBlock];
    if (columns < kBlock) {
      std::fill(bounds + columns, bounds + kBlock, 0.0f);
      x = padded_block(x, columns, l, room);
    }
    add_bound_block(x, bounds, l, sums);
  }
  // Each float lane summed blocks * 4 terms, so it is within (terms - 1) 2^-24 of their exact sum
  // (Higham, "Accuracy and Stability of Numerical Algorithms", 2002, §4.2): twice that is allowed.
  const double rounding = static_cast<double>(blocks * 4 + 2) * 0x1.0p-23;
  const double above_high = sum_of(sums.above) * (1.0 + rounding);  // >= A (e <= its bound)
  const double all_low = sum_of(sums.all) * (1.0 - rounding) / kBoundOverWeight;  // <= W
  // 2^-30 covers the definition's double sums (each lane's relative error < 2^-36 for any
  // vocabulary under 2^20 tokens) and the rounding of fl(p W).
  return above_high * (1.0 + 0x1.0p-30) < top_p_ * all_low * (1.0 - 0x1.0p-30);
}

const std::vector<float>& KeptSet::block_maxima() {
  if (!block_maxima_found_) {
    const auto blocks = static_cast<int64_t>(group_max_.size()) / kLanes;
    s_.block_max.resize(static_cast<size_t>(blocks));
    for (int64_t b = 0; b < blocks; ++b) {
      const float* g = group_max_.data() + b * kLanes;
      s_.block_max[static_cast<size_t>(b)] = *std::max_element(g, g + kLanes);
    }
    block_maxima_found_ = true;
  }
  return s_.block_max;
}

void KeptSet::compute_block(int64_t b) {
  const auto vocab = static_cast<int64_t>(logits_.size());
  const int64_t columns = std::min(kBlock, vocab - b * kBlock);
  float* w = s_.weights.data() + b * kBlock;
  fma_exp_weights(logits_.data() + b * kBlock, columns, l_max_, temperature_, w);
  std::fill(w + columns, w + kBlock, 0.0f);  // the last block's missing columns weigh nothing
  s_.computed[static_cast<size_t>(b)] = 1;
}

LaneTotals KeptSet::totals(float l, float floor) {
  const std::vector<float>& block_max = block_maxima();
  const auto vocab = static_cast<int64_t>(logits_.size());
  const auto blocks = static_cast<int64_t>(block_max.size());
  BlockLanes lanes;
  int64_t skipped = 0;
  double rest = 0.0;  // the envelope's bounds of the blocks left out
  for (int64_t b = 0; b < blocks; ++b) {
    if (!(block_max[static_cast<size_t>(b)] > floor)) {
      // No logit above l (floor <= l), and W' may leave its weights out.
      ++skipped;
      rest += block_prefix_[static_cast<size_t>(b)] -
              (b == 0 ? 0.0 : block_prefix_[static_cast<size_t>(b - 1)]);
      continue;
    }
    if (s_.computed[static_cast<size_t>(b)] == 0) {
      compute_block(b);
    }
    const int64_t columns = std::min(kBlock, vocab - b * kBlock);
    const float* x = logits_.data() + b * kBlock;
    float room[kBlock];
    add_block_lanes(columns < kBlock ? padded_block(x, columns, l, room) : x,
                    s_.weights.data() + b * kBlock, l, lanes);
  }
  // A block's bound read back from the prefix sums is within ulp(total) of the sum it added, and
  // that within 2^-48 of its groups' bounds (the envelope's rounding): allowed for here.
  const double total = blocks > 0 ? block_prefix_.back() : 0.0;
  const double rest_bound =
      (rest + static_cast<double>(skipped + 1) * 0x1.0p-51 * total) * (1.0 + 0x1.0p-40);
  return {tree_sum(lanes.above), tree_sum(lanes.all), skipped == 0, rest_bound};
}

}  // namespace tessera::sampler
