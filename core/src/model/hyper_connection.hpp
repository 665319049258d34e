// Manifold-constrained hyper-connections (mHC): the residual is hc_mult parallel streams mixed by
// a Sinkhorn-normalised matrix (DSV4.md §2.2, TRANSFORMERS_NOTES.md §G). All math in fp32.
#pragma once

#include <cstdint>
#include <vector>

#include "model/dsv4_weights.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

// Per-token mixing coefficients of one mHC site.
struct HcMix {
  std::vector<float> pre;   // [T, n]
  std::vector<float> post;  // [T, n]
  std::vector<float> comb;  // [T, n, n], comb[j][k]: weight of stream j in new stream k
};

// streams X: [T, n, D]. Computes the site's coefficients and x_in = sum_k pre_k X_k -> [T, D],
// then, given the block's input norm weight [D], RMS-normalises each token's x_in in the same
// per-token pass (ops::rms_norm's bits: each row alone) instead of in a pass of its own.
HcMix hc_pre(const ModelConfig& config, const HyperConnection& site, const float* streams,
             int64_t tokens, float* x_in, const float* norm_weight = nullptr);
// X'[k] = post_k * block_out + sum_j comb[j][k] X[j], in place on streams [T, n, D].
void hc_post(const ModelConfig& config, const HcMix& mix, const float* block_out, float* streams,
             int64_t tokens);
// hc_head: y = sum_k pre_k X_k with pre = sigmoid(mix * scale + base) + eps -> [T, D]; given the
// final norm's weight, each token's y is RMS-normalised in the same pass (as hc_pre).
void hc_head(const ModelConfig& config, const ModelWeights& weights, const float* streams,
             int64_t tokens, float* y, const float* norm_weight = nullptr);

}  // namespace tessera::dsv4
