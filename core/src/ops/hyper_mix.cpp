#include "ops/hyper_mix.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tessera/simd_clones.hpp"

namespace tessera::ops {
namespace {

// x[D] = sum_k pre[k] * stream_k   (the layer input read from the n streams of one token)
TS_SIMD_CLONES void pre_mix_token(const float* pre, const float* streams, int64_t n, int64_t D,
                                  float* x) {
  std::fill(x, x + D, 0.0f);
  for (int64_t k = 0; k < n; ++k) {
    const float p = pre[k];
    const float* s = streams + k * D;
    for (int64_t i = 0; i < D; ++i) {
      x[i] += p * s[i];
    }
  }
}

// stream_k = post[k] * out + sum_j comb[j][k] * old_stream_j for one token; old: [n, D] scratch.
TS_SIMD_CLONES void post_mix_token(const float* post, const float* comb, const float* out,
                                   int64_t n, int64_t D, float* X, float* old) {
  std::copy(X, X + n * D, old);
  for (int64_t k = 0; k < n; ++k) {
    float* dst = X + k * D;
    for (int64_t i = 0; i < D; ++i) {
      dst[i] = post[k] * out[i];
    }
    for (int64_t j = 0; j < n; ++j) {
      const float w = comb[j * n + k];
      const float* src = old + j * D;
      for (int64_t i = 0; i < D; ++i) {
        dst[i] += w * src[i];
      }
    }
  }
}

// post_mix_token for n = 4 (DeepSeek-V4's hc_mult) in one pass over the token's streams: each
// column i of the four old streams read into registers, then the four new ones written, with the
// same operations in the same order as post_mix_token (the same bits), where the general loop
// makes five passes over each new stream and copies the old ones first.
TS_SIMD_CLONES void post_mix_token4(const float* post, const float* comb, const float* out,
                                    int64_t D, float* X) {
  constexpr int64_t kN = 4;
  float p[kN], c[kN][kN];  // c[j][k] = comb[j * n + k]
  for (int64_t k = 0; k < kN; ++k) {
    p[k] = post[k];
    for (int64_t j = 0; j < kN; ++j) {
      c[j][k] = comb[j * kN + k];
    }
  }
  float* __restrict x0 = X;
  float* __restrict x1 = X + D;
  float* __restrict x2 = X + 2 * D;
  float* __restrict x3 = X + 3 * D;
  const float* __restrict o = out;
  for (int64_t i = 0; i < D; ++i) {
    const float old[kN] = {x0[i], x1[i], x2[i], x3[i]};
    float acc[kN];
    for (int64_t k = 0; k < kN; ++k) {
      acc[k] = p[k] * o[i];
      for (int64_t j = 0; j < kN; ++j) {
        acc[k] += c[j][k] * old[j];
      }
    }
    x0[i] = acc[0];
    x1[i] = acc[1];
    x2[i] = acc[2];
    x3[i] = acc[3];
  }
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Sinkhorn-Knopp on T matrices of n x n at once: column normalisation first, then (iters - 1)
// rounds of row then column normalisation (Sinkhorn & Knopp 1967; DSV4.md §2.2 step 2).
// c: [n, n, T], token innermost, so every step is a loop over tokens the compiler vectorises;
// each token sees exactly the operations (and order of float additions) of the one-matrix
// version, so the result is bit-identical to running it token by token.
TS_SIMD_CLONES void sinkhorn_batched(float* __restrict c, int64_t n, int64_t T, int64_t iters,
                                     float eps, float* __restrict sum) {
  auto at = [&](int64_t j, int64_t k) { return c + (j * n + k) * T; };
  auto normalise = [&](bool columns) {
    for (int64_t a = 0; a < n; ++a) {  // a: the column (or row) being normalised
      std::fill(sum, sum + T, 0.0f);
      for (int64_t b = 0; b < n; ++b) {
        const float* v = columns ? at(b, a) : at(a, b);
        for (int64_t t = 0; t < T; ++t) {
          sum[t] += v[t];
        }
      }
      for (int64_t b = 0; b < n; ++b) {
        float* v = columns ? at(b, a) : at(a, b);
        for (int64_t t = 0; t < T; ++t) {
          v[t] /= (sum[t] + eps);
        }
      }
    }
  };
  normalise(true);
  for (int64_t it = 1; it < iters; ++it) {
    normalise(false);
    normalise(true);
  }
}

}  // namespace

void hc_coefficients(const HcSite& site, const float* mix, int64_t first, int64_t last, float* pre,
                     float* post, float* comb) {
  const int64_t n = site.n, rows = (2 + n) * n;
  const float* scale = site.scale;
  const float* base = site.base;
  const float eps = site.eps;
  for (int64_t t = first; t < last; ++t) {
    const float* m = mix + t * rows;
    for (int64_t k = 0; k < n; ++k) {
      pre[t * n + k] = sigmoid(m[k] * scale[0] + base[k]) + eps;
      post[t * n + k] = 2.0f * sigmoid(m[n + k] * scale[1] + base[n + k]);
    }
    float* c = comb + t * n * n;
    for (int64_t j = 0; j < n; ++j) {  // softmax over the last axis of each row j
      float row_max = -INFINITY;
      for (int64_t k = 0; k < n; ++k) {
        c[j * n + k] = m[2 * n + j * n + k] * scale[2] + base[2 * n + j * n + k];
        row_max = std::max(row_max, c[j * n + k]);
      }
      float sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        sum += (c[j * n + k] = std::exp(c[j * n + k] - row_max));
      }
      for (int64_t k = 0; k < n; ++k) {
        c[j * n + k] = c[j * n + k] / sum + eps;
      }
    }
  }
  // comb [T, n, n] -> [n, n, T] for the batched Sinkhorn, and back.
  const int64_t count = last - first;
  std::vector<float> by_entry(static_cast<size_t>(count * n * n)), sums(static_cast<size_t>(count));
  for (int64_t t = 0; t < count; ++t) {
    for (int64_t e = 0; e < n * n; ++e) {
      by_entry[e * count + t] = comb[(first + t) * n * n + e];
    }
  }
  sinkhorn_batched(by_entry.data(), n, count, site.sinkhorn_iters, eps, sums.data());
  for (int64_t t = 0; t < count; ++t) {
    for (int64_t e = 0; e < n * n; ++e) {
      comb[(first + t) * n * n + e] = by_entry[e * count + t];
    }
  }
}

void hc_pre_mix(const float* pre, const float* streams, int64_t n, int64_t D, int64_t first,
                int64_t last, float* x) {
  for (int64_t t = first; t < last; ++t) {
    pre_mix_token(pre + t * n, streams + t * n * D, n, D, x + t * D);
  }
}

void hc_post_mix(const float* post, const float* comb, const float* out, int64_t n, int64_t D,
                 int64_t first, int64_t last, float* streams) {
  if (n == 4) {
    for (int64_t t = first; t < last; ++t) {
      post_mix_token4(post + t * n, comb + t * n * n, out + t * D, D, streams + t * n * D);
    }
    return;
  }
  std::vector<float> old(static_cast<size_t>(n * D));
  for (int64_t t = first; t < last; ++t) {
    post_mix_token(post + t * n, comb + t * n * n, out + t * D, n, D, streams + t * n * D,
                   old.data());
  }
}

void hc_head_mix(const float* mix, float scale, const float* base, float eps, const float* streams,
                 int64_t n, int64_t D, int64_t first, int64_t last, float* y) {
  for (int64_t t = first; t < last; ++t) {
    float* out = y + t * D;
    std::fill(out, out + D, 0.0f);
    for (int64_t k = 0; k < n; ++k) {
      const float pre = sigmoid(mix[t * n + k] * scale + base[k]) + eps;
      const float* s = streams + (t * n + k) * D;
      for (int64_t i = 0; i < D; ++i) {
        out[i] += pre * s[i];
      }
    }
  }
}

}  // namespace tessera::ops
