// Log-probabilities reported with a token: log_softmax of the RAW logits, before penalties,
// temperature and truncation (vLLM's default logprobs_mode "raw_logprobs"), computed in double.
#pragma once

#include <cstdint>

#include "tessera/plugin_abi.h"

namespace tessera::sampler {

// log_softmax(l)_i = l_i - (max + log(sum_j exp(l_j - max))).
struct RawLogSoftmax {
  double log_normaliser = 0.0;
  [[nodiscard]] float of(float logit) const noexcept {
    return static_cast<float>(static_cast<double>(logit) - log_normaliser);
  }
};

// logits: [vocab], finite.
[[nodiscard]] RawLogSoftmax raw_log_softmax(const float* logits, int32_t vocab) noexcept;

// Writes the min(n, vocab) most likely tokens, best first (equal logits: lower id first), into
// result.top_tokens / result.top_logprobs and sets result.n_top. Needs n <= result.top_capacity.
void fill_top_logprobs(const float* logits, int32_t vocab, const RawLogSoftmax& log_softmax,
                       int32_t n, ts_sampler_result& result);

}  // namespace tessera::sampler
