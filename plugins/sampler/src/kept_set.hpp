// Which tokens top-p and min-p keep, asked one proposal at a time: how a truncated row draws by
// rejection (docs/sampler.md "Top-p and min-p by rejection").
//
// The rejection draw (rejection_draw.hpp) proposes tokens distributed exactly as the softmax
// e(l_j) / sum_k e(l_k), e = fma_exp_weight. A truncated row takes the first accepted proposal
// that the kept set K holds; conditioned on landing in K, a softmax draw is distributed as the
// softmax renormalised over K, which is what top-p and min-p sample from (HF's warper order: the
// nucleus measured before min-p's cut). K is, with p = top_p:
//   top-p: j is kept when A_j < fl(p W): A_j sums the weights of the columns whose logit is above
//          l_j, W every column's weight. Walking the tokens from the most probable down, those
//          above j have not yet reached p of the mass, so j is in the shortest prefix that does;
//          tokens with equal logits are kept or dropped together (docs/sampler.md, "Boundary
//          ties").
//   min-p: j is kept when e(l_j) >= min_p e(l_max) (products of two floats, exact in double).
// The sums are defined, bit for bit, as 16 double lanes, lane l adding the weights of columns
// l, l + 16, l + 32, ... in column order (A_j only those above l_j), then the lanes in tree_sum's
// fixed tree: every vector width adds the same operands in the same order, so every CPU keeps the
// same set and a seed gives the same token everywhere, with no certification.
//
// Cost: nothing for a proposal at the row's max (A = 0), which is most proposals of a peaked row,
// or one an earlier proposal settles (a kept logit keeps every higher one, a dropped one drops
// every lower one: A_j only grows as l_j falls). A flat row's (3/4 of the blocks hold a logit
// above it): first the weights' upper bounds, a quarter of an exp each, which keep it when
// sum_above(bound) < p sum(bound) / 1.0625 with the roundings allowed for (~89% of them at
// p = 0.95). Otherwise the weights of the blocks (TS_LOGIT_GROUP_BLOCK columns) whose largest
// logit is above l_j: they give A_j exactly and, summed alone, a W' <= W (rounding is monotonic
// and the weights are >= 0: leaving terms out never raises a running sum), so A_j < fl(p W') keeps
// j; the rejection envelope's bounds U of the other blocks give W <= W' + U, so
// A_j >= p (W' + U) drops it; if neither, the same with more blocks, then with all of them.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace tessera::sampler {

struct KeptSetScratch {
  std::vector<float> weights;     // [blocks * block] e(l) of the blocks computed so far
  std::vector<uint8_t> computed;  // [blocks] whether a block's weights are there
  std::vector<float> block_max;   // [blocks] the largest logit of each block
};

// The sums over some of a row's blocks for a logit l.
struct LaneTotals {
  double above = 0.0;        // A: the weights of the columns above l
  double all = 0.0;          // W' (W when every_block): the weights of the blocks summed
  bool every_block = false;  // no block was left out
  double rest_bound = 0.0;   // >= the weights of the blocks left out (the envelope's bounds)
};

// The lanes of A and W, lane l holding columns l, l + 16, ... of the blocks added so far.
struct BlockLanes {
  double all[16] = {};
  double above[16] = {};
};

// Adds one full block (TS_LOGIT_GROUP_BLOCK columns: logits, their weights w) to the lanes, in
// column order: every weight to all, those whose logit is above l to above. add_block_lanes picks
// the AVX-512 version where the CPU has it; every version gives the same bits
// (sampler_kernels_test).
void add_block_lanes(const float* logits, const float* w, float l, BlockLanes& lanes);
void add_block_lanes_portable(const float* logits, const float* w, float l, BlockLanes& lanes);

class KeptSet {
 public:
  // logits: [vocab] finite (penalised when penalties apply), the row the proposals draw from;
  // group_max: their group maxima (group_scan.hpp); l_max: their max; temperature > 0;
  // top_p in (0, 1] (1: off), min_p in [0, 1] (0: off); block_prefix: the rejection envelope's
  // (RejectionEnvelope::block_prefix, built from the same arguments before the first keeps).
  // Holds references to all of them.
  KeptSet(std::span<const float> logits, std::span<const float> group_max, float l_max,
          float temperature, float top_p, float min_p, const std::vector<double>& block_prefix,
          KeptSetScratch& scratch);

  // Whether K holds column j (0 <= j < vocab).
  [[nodiscard]] bool keeps(int64_t j);

 private:
  [[nodiscard]] bool top_p_keeps(float l);
  // A_j < fl(p W) from the weights of as few blocks as decide it.
  [[nodiscard]] bool exact_keeps(float l);
  // Whether at least 3/4 of the blocks hold a logit above l (a flat row's proposal).
  [[nodiscard]] bool mostly_above(float l);
  // Whether the weights' upper bounds (fma_exp.hpp, cheaper than the weights) already show that
  // A < fl(p W): false means "not shown", not "dropped".
  [[nodiscard]] bool bound_keeps(float l);
  // The largest logit of each block, found from the group maxima on first use.
  const std::vector<float>& block_maxima();
  void compute_block(int64_t b);
  // A (above l) and W' over the blocks whose max is above floor (<= l), their weights computed
  // first where they are not yet.
  LaneTotals totals(float l, float floor);

  std::span<const float> logits_;
  std::span<const float> group_max_;
  const std::vector<double>& block_prefix_;
  float l_max_;
  float temperature_;
  double top_p_;
  double min_p_weight_;  // min_p e(l_max): the least weight min-p keeps
  KeptSetScratch& s_;
  bool block_maxima_found_ = false;
  double threshold_ = -1.0;                                          // fl(p W) once W is known
  float lowest_kept_ = std::numeric_limits<float>::infinity();       // top-p keeps every l >= it
  float highest_dropped_ = -std::numeric_limits<float>::infinity();  // and drops every l <= it
};

}  // namespace tessera::sampler
