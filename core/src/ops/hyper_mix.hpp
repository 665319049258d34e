// The manifold-constrained hyper-connection (mHC) mixes of DeepSeek-V4 (DSV4.md §2.2,
// TRANSFORMERS_NOTES.md §G) on raw fp32 arrays, for tokens [first, last) of arrays indexed by
// absolute token: the model runs them per chunk of tokens on its compute threads
// (model/hyper_connection.cpp), the device layer's cpu backend over all tokens. Every token's
// results are its own, so they do not depend on the chunks.
#pragma once

#include <cstdint>

namespace tessera::ops {

struct HcSite {
  const float* scale = nullptr;  // [3]
  const float* base = nullptr;   // [(2 + n) * n]
  int64_t n = 4;                 // hc_mult
  int64_t sinkhorn_iters = 20;
  float eps = 1e-6f;  // hc_eps
};

// From mix [T, (2 + n) * n] (the site's logits): pre [T, n] = sigmoid(mix[:n] * scale0 + base)
// + eps, post [T, n] = 2 sigmoid(mix[n:2n] * scale1 + base), comb [T, n, n] = Sinkhorn of
// softmax(mix[2n:] * scale2 + base) + eps (columns first, then (iters - 1) rows-then-columns).
void hc_coefficients(const HcSite& site, const float* mix, int64_t first, int64_t last, float* pre,
                     float* post, float* comb);

// x[t] = sum_k pre[t, k] * streams[t, k]; streams [T, n, D], x [T, D].
void hc_pre_mix(const float* pre, const float* streams, int64_t n, int64_t D, int64_t first,
                int64_t last, float* x);

// streams[t, k] = post[t, k] * out[t] + sum_j comb[t, j, k] * streams[t, j] (old values), in
// place; out [T, D].
void hc_post_mix(const float* post, const float* comb, const float* out, int64_t n, int64_t D,
                 int64_t first, int64_t last, float* streams);

// The head's mix: y[t] = sum_k (sigmoid(mix[t, k] * scale + base[k]) + eps) * streams[t, k];
// mix [T, n].
void hc_head_mix(const float* mix, float scale, const float* base, float eps, const float* streams,
                 int64_t n, int64_t D, int64_t first, int64_t last, float* y);

}  // namespace tessera::ops
