#include "engine/batch_sampler.hpp"

#include "plugins/sampler_call.hpp"

namespace tessera::engine {

ts_sampling_params resolve_sampling(const Request& request, const SamplingDefaults& defaults,
                                    uint64_t fresh_seed) {
  const SamplingOptions& s = request.sampling;
  ts_sampling_params p{};
  p.temperature = static_cast<float>(s.temperature.value_or(defaults.temperature));
  p.top_k = static_cast<int32_t>(s.top_k.value_or(defaults.top_k));
  p.top_p = static_cast<float>(s.top_p.value_or(defaults.top_p));
  p.min_p = static_cast<float>(s.min_p.value_or(defaults.min_p));
  p.repetition_penalty =
      static_cast<float>(s.repetition_penalty.value_or(defaults.repetition_penalty));
  p.frequency_penalty =
      static_cast<float>(s.frequency_penalty.value_or(defaults.frequency_penalty));
  p.presence_penalty = static_cast<float>(s.presence_penalty.value_or(defaults.presence_penalty));
  if (s.seed) {
    p.seed = *s.seed;
  } else if (defaults.seed >= 0) {
    p.seed = static_cast<uint64_t>(defaults.seed);
  } else {
    p.seed = fresh_seed;
  }
  p.logprobs = request.logprobs || request.top_logprobs > 0 ? 1 : 0;
  p.top_logprobs = request.top_logprobs;
  return p;
}

std::span<SampledToken> BatchSampler::sample(std::span<Sequence* const> sequences,
                                             const dsv4::Logits& logits,
                                             std::span<const int64_t> rows) {
  const size_t n = sequences.size();
  rows_.resize(n);
  results_.resize(n);
  size_t top_total = 0;
  for (const Sequence* s : sequences) {
    top_total += static_cast<size_t>(s->params.top_logprobs);
  }
  top_tokens_.resize(top_total);
  top_logprobs_.resize(top_total);
  size_t top_at = 0;
  for (size_t i = 0; i < n; ++i) {
    const Sequence& s = *sequences[i];
    ts_sampler_row& row = rows_[i];
    row = {};
    row.logits = logits.row(rows[i]);
    row.params = s.params;
    row.prompt_tokens = s.tokens.data();
    row.n_prompt_tokens = s.n_prompt;
    row.output_tokens = s.tokens.data() + s.n_prompt;
    row.n_output_tokens = s.n_output();
    row.rng_counter = static_cast<uint64_t>(s.n_output());
    ts_sampler_result& r = results_[i];
    r = {};
    r.top_capacity = s.params.top_logprobs;
    r.top_tokens = top_tokens_.data() + top_at;
    r.top_logprobs = top_logprobs_.data() + top_at;
    top_at += static_cast<size_t>(s.params.top_logprobs);
  }
  gather_row_hints(logits, rows, hints_);
  const ts_status status =
      call_sampler(sampler_, rows_, hints_, static_cast<int32_t>(logits.vocab), results_.data());
  last_error_.clear();
  if (status.code != TS_OK) {
    last_error_ = std::string(sampler_.name()) +
                  ": sample: " + (status.message != nullptr ? status.message : "(no message)");
    for (size_t i = 0; i < n; ++i) {  // rows the plugin could not even attempt count as failed
      if (status.code != TS_ERR_NUMERIC && status.code != TS_ERR_INVALID_ARGUMENT) {
        results_[i].token = -1;
      }
    }
  }
  out_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const ts_sampler_result& r = results_[i];
    SampledToken& t = out_[i];
    t.token = r.token >= 0 && r.token < logits.vocab ? r.token : -1;
    t.logprob = r.logprob;
    t.top.clear();
    for (int32_t k = 0; k < r.n_top; ++k) {
      t.top.emplace_back(r.top_tokens[k], r.top_logprobs[k]);
    }
  }
  return out_;
}

}  // namespace tessera::engine
