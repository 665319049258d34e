// Temperature and the truncation warpers, in Hugging Face's order (generation/utils.py builds
// Temperature -> TopK -> TopP -> MinP): turns one row's penalised logits into unnormalised
// sampling weights. Boundary rules (docs/sampler.md):
//   - top-k keeps every token whose logit is >= the k-th largest one: ties at the k-th place are
//     all kept (HF TopKLogitsWarper and vLLM compare with the k-th value the same way).
//   - top-p walks the survivors from the most probable down and keeps the shortest prefix whose
//     mass reaches top_p of the survivors' mass (HF/vLLM: drop the ascending tail whose mass is
//     <= 1 - top_p); every token as probable as the last kept one is kept too, so the kept set
//     never depends on token ids. The most probable token always survives.
//   - min-p drops tokens whose probability is < min_p * (largest probability) (HF
//     MinPLogitsWarper); the ratio is the same before or after renormalisation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/plugin_abi.h"

namespace tessera::sampler {

struct TruncationScratch {
  std::vector<float> selection;  // [vocab] values moved around by selection algorithms
};

// top-k alone: every logit below the k-th largest becomes -inf (ties with the k-th value stay).
// top_k <= 0 or >= vocab: nothing changes.
void apply_top_k(std::span<float> logits, int32_t top_k, std::vector<float>& selection);

// values: [vocab] in: penalised logits (finite); out: weight exp((l - l_max) / T) for kept tokens,
// exactly 0 for removed ones. The largest weight is exactly 1. Requires temperature > 0.
void logits_to_sampling_weights(std::span<float> values, const ts_sampling_params& params,
                                TruncationScratch& scratch);

// Inverse-CDF draw over the weights in token-id order: the first token whose cumulative weight
// exceeds u * total. u in [0, 1). Returns the last positive-weight token if rounding runs past it.
[[nodiscard]] int32_t draw_from_weights(std::span<const float> weights, double u);

}  // namespace tessera::sampler
