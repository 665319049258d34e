#include "row_sampler.hpp"

#include <algorithm>
#include <span>

#include "counter_rng.hpp"
#include "logprobs.hpp"

namespace tessera::sampler {
namespace {

// Greedy decoding: the largest penalised logit, the lowest id among equals.
int32_t argmax_lowest_id(std::span<const float> values) {
  return static_cast<int32_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

}  // namespace

RowError sample_row(const ts_sampler_row& row, int32_t vocab, ts_sampler_result& result,
                    RowWorkspace& workspace) {
  result.token = -1;
  result.n_top = 0;
  if (RowError e = validate_row_arguments(row, vocab, result); e.failed()) {
    return e;
  }
  if (RowError e = validate_row_logits(row.logits, vocab); e.failed()) {
    return e;
  }
  const ts_sampling_params& params = row.params;

  if (workspace.values.size() < static_cast<size_t>(vocab)) {
    workspace.values.resize(vocab);
  }
  std::span<float> values(workspace.values.data(), static_cast<size_t>(vocab));
  std::copy(row.logits, row.logits + vocab, values.begin());
  apply_penalties(row, values, workspace.penalties);

  int32_t token = 0;
  if (params.temperature == 0.0f) {
    token = argmax_lowest_id(values);
  } else {
    logits_to_sampling_weights(values, params, workspace.truncation);
    token = draw_from_weights(values, counter_uniform(params.seed, row.rng_counter));
  }

  if (params.logprobs > 0 || params.top_logprobs > 0) {
    const RawLogSoftmax log_softmax = raw_log_softmax(row.logits, vocab);
    result.logprob = log_softmax.of(row.logits[token]);
    if (params.top_logprobs > 0) {
      fill_top_logprobs(row.logits, vocab, log_softmax, params.top_logprobs, result);
    }
  } else {
    result.logprob = 0.0f;
  }
  result.token = token;
  return {};
}

}  // namespace tessera::sampler
