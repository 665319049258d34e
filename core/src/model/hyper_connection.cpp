#include "model/hyper_connection.hpp"

#include "model/forward_batch.hpp"
#include "ops/compute_threads.hpp"
#include "ops/hyper_mix.hpp"
#include "ops/linear.hpp"
#include "ops/norms.hpp"
#include "util/uninitialized_vector.hpp"

namespace tessera::dsv4 {

namespace {

// Per-token loops below run in kMinTokensPerChunk chunks (forward_batch.hpp), one chunk per
// thread: the batched Sinkhorn vectorises over a chunk's tokens, and each thread keeps its rows
// of the streams.
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

}  // namespace

HcMix hc_pre(const ModelConfig& config, const HyperConnection& site, const float* streams,
             int64_t tokens, float* x_in, const float* norm_weight) {
  const int64_t n = config.hc_mult, D = config.hidden_size;
  const float eps = static_cast<float>(config.hc_eps);
  const int64_t rows = site.fn.shape[0];  // (2 + n) * n
  UninitializedVector<float> mix(static_cast<size_t>(tokens * rows));
  const ops::HcSite coefficients{site.scale.ptr(), site.base.ptr(), n, config.hc_sinkhorn_iters,
                                 eps};
  HcMix out;
  out.pre.resize(static_cast<size_t>(tokens * n));
  out.post.resize(static_cast<size_t>(tokens * n));
  out.comb.resize(static_cast<size_t>(tokens * n * n));
  // Each token's outputs are its own, so chunks of tokens run on any thread with the same bits.
  for_each_token_chunk(tokens, [&](int64_t first, int64_t last) {
    mix_logits(config, site.fn, streams, first, last, mix.data() + first * rows);
    ops::hc_coefficients(coefficients, mix.data(), first, last, out.pre.data(), out.post.data(),
                         out.comb.data());
    ops::hc_pre_mix(out.pre.data(), streams, n, D, first, last, x_in);
    norm_rows(config, norm_weight, x_in, first, last);
  });
  return out;
}

void hc_post(const ModelConfig& config, const HcMix& mix, const float* block_out, float* streams,
             int64_t tokens) {
  const int64_t n = config.hc_mult, D = config.hidden_size;
  for_each_token_chunk(tokens, [&](int64_t first, int64_t last) {
    ops::hc_post_mix(mix.post.data(), mix.comb.data(), block_out, n, D, first, last, streams);
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
    ops::hc_head_mix(mix.data(), scale, weights.hc_head_base.data.data(),
                     static_cast<float>(config.hc_eps), streams, n, D, first, last, y);
    norm_rows(config, norm_weight, y, first, last);
  });
}

}  // namespace tessera::dsv4
