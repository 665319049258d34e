// Turns a request's sampling options into the sampler plugin's per-row parameters, and samples one
// token for each of a step's finished rows through the plugin in a single call.
// Engine loop thread only (the sampler instance serialises calls anyway).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "engine/request.hpp"
#include "engine/sequence.hpp"
#include "model/dsv4_model.hpp"
#include "plugins/sampler_call.hpp"
#include "util/plugin_instance.hpp"

namespace tessera::engine {

// Request values over defaults; `fresh_seed` is used when neither gives a seed.
ts_sampling_params resolve_sampling(const Request& request, const SamplingDefaults& defaults,
                                    uint64_t fresh_seed);

struct SampledToken {
  int32_t token = -1;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;
};

class BatchSampler {
 public:
  explicit BatchSampler(const PluginInstance& sampler)
      : sampler_(sampler), greedy_from_scan_(sampler_takes_greedy_from_scan(sampler)) {}

  // Whether a sequence's next row may come without its values (Logits::row null): when it is
  // not sampled (nothing reads it), or when it is greedy and the plugin takes greedy rows by
  // their scans.
  bool scan_only(const ts_sampling_params& params, bool sampled) const {
    return !sampled || (greedy_from_scan_ && ts_sampling_is_greedy(&params) != 0);
  }

  // rows[i] is the logits row of sequences[i]; its draw index is its output length. A row the
  // plugin could not sample has token -1, and last_error() says why. The result is valid until
  // the next call (the buffers are reused from step to step; the caller may move from them).
  std::span<SampledToken> sample(std::span<Sequence* const> sequences, const dsv4::Logits& logits,
                                 std::span<const int64_t> rows);
  const std::string& last_error() const { return last_error_; }

 private:
  const PluginInstance& sampler_;
  bool greedy_from_scan_;
  std::vector<ts_sampler_row> rows_;
  RowHints hints_;  // what the model's vocabulary head found of the rows, when usable
  std::vector<ts_sampler_result> results_;
  std::vector<int32_t> top_tokens_;
  std::vector<float> top_logprobs_;
  std::vector<SampledToken> out_;
  std::string last_error_;
};

}  // namespace tessera::engine
