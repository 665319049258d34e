// How far apart two next-token distributions are, for one position scored by both arms of an
// A/B comparison. Everything is computed in double from log_softmax of the fp32 logits:
//   KL(A || B) = sum_i p_i (log p_i - log q_i),   p = softmax(a), q = softmax(b)
// (Kullback & Leibler 1951; the direction that weighs the tokens arm A would actually pick).
// Identical logit rows give exactly 0: every term is p_i * 0.
// Also the total-variation distance between the two arms' sampling distributions
// (sampling_distribution.hpp), which bounds how often coupled draws disagree (docs/ab.md
// "Coupling").
#pragma once

#include <cstdint>
#include <span>

#include "ab/sampling_distribution.hpp"

namespace tessera::ab {

struct PositionDivergence {
  double kl = 0;            // KL(A || B) in nats, >= 0
  bool top1_agree = false;  // argmax of both rows equal (ties: the lowest id, as the sampler)
  int32_t top1_a = -1, top1_b = -1;
  double abs_dlogprob = -1;   // |log p(chosen) - log q(chosen)|; -1 when no chosen token
  double max_abs_dlogit = 0;  // max_i |a_i - b_i| over the vocabulary (raw logits)
  double tv = 0;              // TV(sampling distribution of A, of B), in [0, 1]
};

// a, b: [vocab] logits of the same position from arm A and arm B. chosen: the token that follows
// in the scored sequence, or -1 (the last row of a sequence). shape_a, shape_b: how each arm
// samples (the TV compares those distributions; the defaults: the plain softmax).
PositionDivergence compare_positions(std::span<const float> a, std::span<const float> b,
                                     int32_t chosen, const SamplingShape& shape_a = {},
                                     const SamplingShape& shape_b = {});

}  // namespace tessera::ab
