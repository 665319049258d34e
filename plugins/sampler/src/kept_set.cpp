#include "kept_set.hpp"

#include <algorithm>
#include <cstring>

#include "fma_exp.hpp"
#include "group_scan.hpp"
#include "target_clones.hpp"  // TS_SAMPLER_CLONES: one clone per x86-64 level

namespace tessera::sampler {
namespace {

constexpr int64_t kLanes = TS_LOGIT_GROUP_LANES;
constexpr int64_t kBlock = TS_LOGIT_GROUP_BLOCK;
static_assert(kLanes == 16, "the lanes are two 8-double vectors");

using Doubles8 = double __attribute__((vector_size(64)));
using Floats8 = float __attribute__((vector_size(32)));

// 16 double lanes: lo holds lanes 0-7, hi lanes 8-15.
struct Lanes {
  Doubles8 lo{};
  Doubles8 hi{};
};

// The lanes' sum in the fixed tree of rejection_draw.cpp's tree_sum.
double tree_sum(const Lanes& lanes) {
  double v[kLanes];
  std::memcpy(v, &lanes.lo, sizeof lanes.lo);
  std::memcpy(v + 8, &lanes.hi, sizeof lanes.hi);
  return (((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]))) +
         (((v[8] + v[9]) + (v[10] + v[11])) + ((v[12] + v[13]) + (v[14] + v[15])));
}

// One full block's 256 columns added to the lanes, 16 at a time (column lane + 16 k goes to
// lane `lane`, in k order): every weight to all, those whose logit is above l to above. A masked
// add leaves a lane's sum as it is (x + 0 = x for the sums' x >= +0), as leaving the term out does.
TS_SAMPLER_CLONES void add_block(const float* __restrict logits, const float* __restrict w, float l,
                                 Lanes& all, Lanes& above) {
  Lanes a = all;
  Lanes b = above;
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
  all = a;
  above = b;
}

}  // namespace

KeptSet::KeptSet(std::span<const float> logits, std::span<const float> group_max, float l_max,
                 float temperature, float top_p, float min_p, KeptSetScratch& scratch)
    : logits_(logits),
      group_max_(group_max),
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
    kept = totals(l, false).above < threshold_;
  } else {
    const LaneTotals some = totals(l, false);  // W' <= W: enough to keep, not to drop
    kept = some.above < top_p_ * some.all;
    if (some.every_block) {
      threshold_ = top_p_ * some.all;
    } else if (!kept) {
      const LaneTotals every = totals(l, true);
      threshold_ = top_p_ * every.all;
      kept = every.above < threshold_;
    }
  }
  if (kept) {
    lowest_kept_ = std::min(lowest_kept_, l);
  } else {
    highest_dropped_ = std::max(highest_dropped_, l);
  }
  return kept;
}

void KeptSet::find_block_maxima() {
  const auto blocks = static_cast<int64_t>(group_max_.size()) / kLanes;
  s_.block_max.resize(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    const float* g = group_max_.data() + b * kLanes;
    s_.block_max[static_cast<size_t>(b)] = *std::max_element(g, g + kLanes);
  }
  block_maxima_found_ = true;
}

void KeptSet::compute_block(int64_t b) {
  const auto vocab = static_cast<int64_t>(logits_.size());
  const int64_t columns = std::min(kBlock, vocab - b * kBlock);
  float* w = s_.weights.data() + b * kBlock;
  fma_exp_weights(logits_.data() + b * kBlock, columns, l_max_, temperature_, w);
  std::fill(w + columns, w + kBlock, 0.0f);  // the last block's missing columns weigh nothing
  s_.computed[static_cast<size_t>(b)] = 1;
}

LaneTotals KeptSet::totals(float l, bool all_blocks) {
  if (!block_maxima_found_) {
    find_block_maxima();
  }
  const auto vocab = static_cast<int64_t>(logits_.size());
  const auto blocks = static_cast<int64_t>(s_.block_max.size());
  Lanes all;
  Lanes above;
  bool skipped = false;
  for (int64_t b = 0; b < blocks; ++b) {
    if (!all_blocks && !(s_.block_max[static_cast<size_t>(b)] > l)) {
      skipped = true;
      continue;  // no logit above l, and W' may leave its weights out
    }
    if (s_.computed[static_cast<size_t>(b)] == 0) {
      compute_block(b);
    }
    const float* w = s_.weights.data() + b * kBlock;
    const int64_t columns = std::min(kBlock, vocab - b * kBlock);
    if (columns == kBlock) {
      add_block(logits_.data() + b * kBlock, w, l, all, above);
    } else {  // the last, partial block: its missing columns below every l, with weight 0
      float padded[kBlock];
      std::fill(padded, padded + kBlock, l);
      std::copy_n(logits_.data() + b * kBlock, columns, padded);
      add_block(padded, w, l, all, above);
    }
  }
  return {tree_sum(above), tree_sum(all), !skipped};
}

}  // namespace tessera::sampler
