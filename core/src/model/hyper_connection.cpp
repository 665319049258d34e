#include "model/hyper_connection.hpp"

#include <algorithm>
#include <cmath>

#include "model/forward_batch.hpp"
#include "ops/compute_threads.hpp"
#include "ops/linear.hpp"
#include "ops/norms.hpp"
#include "tessera/simd_clones.hpp"
#include "util/uninitialized_vector.hpp"

namespace tessera::dsv4 {

namespace {

// Per-token loops below run in kMinTokensPerChunk chunks (forward_batch.hpp). The batched
// Sinkhorn vectorises over a chunk's tokens: a 64-sequence step's 72 tokens in 4 chunks instead
// of 9 of 8 took hc_pre's per-token part 27 -> 14 us (one chunk per thread since session 14: each
// thread keeps its rows of the streams).
template <typename F>
void for_each_token_chunk(int64_t tokens, const F& body) {  // body(first, last)
  ops::for_each_row_chunk(tokens, kMinTokensPerChunk, body);
}

// x[first, last) RMS-normalised by `weight` when given (the norm hc_pre / hc_head fuse).
void norm_rows(const ModelConfig& config, const float* weight, float* x, int64_t first,
               int64_t last) {
  if (weight != nullptr) {
    const int64_t D = config.hidden_size;
    ops::rms_norm(x + first * D, last - first, D, weight, static_cast<float>(config.rms_norm_eps));
  }
}

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
// same operations in the same order as post_mix_token (the same bits). The general loop made five
// passes over each new stream and copied the old ones first (~3% of a 64-sequence 50m step's CPU
// time on a Zen 3, session 26).
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

// mix[t, rows] = (X_t flattened . fn^T) * rsqrt(mean(X_t^2) + eps) (the unweighted-RMS input)
// for the tokens [first, last), into mix (rows of `rows`, from token `first`). Called in the
// token chunk of the pass that uses it: each thread's tokens through the product, the streams it
// reads being the ones it wrote (hc_post splits the tokens the same way), and no hand-off of its
// own (the product's few columns, 24 at n = 4, split by column, left one thread idle a third of
// the time). Each output is one chain over k whatever the rows beside it: the same bits.
void mix_logits(const ModelConfig& config, const Tensor& fn, const float* streams, int64_t first,
                int64_t last, float* mix) {
  const int64_t width = config.hc_mult * config.hidden_size;
  const int64_t rows = fn.shape[0];
  ops::linear(streams + first * width, last - first, fn, mix);
  for (int64_t t = first; t < last; ++t) {
    const float r =
        ops::rms_scale(streams + t * width, width, static_cast<float>(config.rms_norm_eps));
    for (int64_t i = 0; i < rows; ++i) {
      mix[(t - first) * rows + i] *= r;
    }
  }
}

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

HcMix hc_pre(const ModelConfig& config, const HyperConnection& site, const float* streams,
             int64_t tokens, float* x_in, const float* norm_weight) {
  const int64_t n = config.hc_mult, D = config.hidden_size;
  const float eps = static_cast<float>(config.hc_eps);
  const int64_t rows = site.fn.shape[0];  // (2 + n) * n
  UninitializedVector<float> mix(static_cast<size_t>(tokens * rows));
  const float* scale = site.scale.ptr();
  const float* base = site.base.ptr();
  HcMix out;
  out.pre.resize(static_cast<size_t>(tokens * n));
  out.post.resize(static_cast<size_t>(tokens * n));
  out.comb.resize(static_cast<size_t>(tokens * n * n));
  // Each token's outputs are its own, so chunks of tokens run on any thread with the same bits.
  for_each_token_chunk(tokens, [&](int64_t first, int64_t last) {
    mix_logits(config, site.fn, streams, first, last, mix.data() + first * rows);
    for (int64_t t = first; t < last; ++t) {
      const float* m = mix.data() + t * rows;
      for (int64_t k = 0; k < n; ++k) {
        out.pre[t * n + k] = sigmoid(m[k] * scale[0] + base[k]) + eps;
        out.post[t * n + k] = 2.0f * sigmoid(m[n + k] * scale[1] + base[n + k]);
      }
      float* c = out.comb.data() + t * n * n;
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
    std::vector<float> by_entry(static_cast<size_t>(count * n * n)),
        sums(static_cast<size_t>(count));
    for (int64_t t = 0; t < count; ++t) {
      for (int64_t e = 0; e < n * n; ++e) {
        by_entry[e * count + t] = out.comb[(first + t) * n * n + e];
      }
    }
    sinkhorn_batched(by_entry.data(), n, count, config.hc_sinkhorn_iters, eps, sums.data());
    for (int64_t t = 0; t < count; ++t) {
      for (int64_t e = 0; e < n * n; ++e) {
        out.comb[(first + t) * n * n + e] = by_entry[e * count + t];
      }
    }
    for (int64_t t = first; t < last; ++t) {
      pre_mix_token(out.pre.data() + t * n, streams + t * n * D, n, D, x_in + t * D);
    }
    norm_rows(config, norm_weight, x_in, first, last);
  });
  return out;
}

void hc_post(const ModelConfig& config, const HcMix& mix, const float* block_out, float* streams,
             int64_t tokens) {
  const int64_t n = config.hc_mult, D = config.hidden_size;
  for_each_token_chunk(tokens, [&](int64_t first, int64_t last) {
    if (n == 4) {
      for (int64_t t = first; t < last; ++t) {
        post_mix_token4(mix.post.data() + t * n, mix.comb.data() + t * n * n, block_out + t * D, D,
                        streams + t * n * D);
      }
      return;
    }
    std::vector<float> old(static_cast<size_t>(n * D));
    for (int64_t t = first; t < last; ++t) {
      post_mix_token(mix.post.data() + t * n, mix.comb.data() + t * n * n, block_out + t * D, n, D,
                     streams + t * n * D, old.data());
    }
  });
}

void hc_head(const ModelConfig& config, const ModelWeights& weights, const float* streams,
             int64_t tokens, float* y, const float* norm_weight) {
  const int64_t n = config.hc_mult, D = config.hidden_size;
  const int64_t rows = weights.hc_head_fn.shape[0];  // n
  UninitializedVector<float> mix(static_cast<size_t>(tokens * rows));
  const float scale = weights.hc_head_scale.data[0];
  for_each_token_chunk(tokens, [&](int64_t first, int64_t last) {
    mix_logits(config, weights.hc_head_fn, streams, first, last, mix.data() + first * rows);
    for (int64_t t = first; t < last; ++t) {
      float* out = y + t * D;
      std::fill(out, out + D, 0.0f);
      for (int64_t k = 0; k < n; ++k) {
        const float pre = sigmoid(mix[t * rows + k] * scale + weights.hc_head_base.data[k]) +
                          static_cast<float>(config.hc_eps);
        const float* s = streams + (t * n + k) * D;
        for (int64_t i = 0; i < D; ++i) {
          out[i] += pre * s[i];
        }
      }
    }
    norm_rows(config, norm_weight, y, first, last);
  });
}

}  // namespace tessera::dsv4
