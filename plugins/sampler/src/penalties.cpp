#include "penalties.hpp"

namespace tessera::sampler {

bool penalties_active(const ts_sampling_params& p) noexcept {
  return p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f;
}

void apply_penalties(const ts_sampler_row& row, std::span<float> logits, PenaltyScratch& scratch) {
  const ts_sampling_params& p = row.params;
  if (!penalties_active(p)) {
    return;
  }
  const size_t vocab = logits.size();
  if (scratch.output_count.size() != vocab) {
    scratch.output_count.assign(vocab, 0);
    scratch.in_context.assign(vocab, 0);
  }
  scratch.touched.clear();
  auto mark = [&](int32_t token) {
    if (scratch.in_context[token] == 0) {
      scratch.in_context[token] = 1;
      scratch.touched.push_back(token);
    }
  };
  for (int64_t i = 0; i < row.n_prompt_tokens; ++i) {
    mark(row.prompt_tokens[i]);
  }
  for (int64_t i = 0; i < row.n_output_tokens; ++i) {
    mark(row.output_tokens[i]);
    ++scratch.output_count[row.output_tokens[i]];
  }

  const double repetition = p.repetition_penalty;
  const double frequency = p.frequency_penalty;
  const double presence = p.presence_penalty;
  for (const int32_t token : scratch.touched) {
    double l = logits[token];
    if (repetition != 1.0) {
      l = l > 0.0 ? l / repetition : l * repetition;
    }
    const int32_t count = scratch.output_count[token];
    if (count > 0) {
      l -= frequency * count + presence;
    }
    logits[token] = static_cast<float>(l);
    scratch.in_context[token] = 0;
    scratch.output_count[token] = 0;
  }
}

}  // namespace tessera::sampler
