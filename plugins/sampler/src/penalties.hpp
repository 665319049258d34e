// Repetition, frequency and presence penalties on one row's logits, in the order vLLM applies
// them (vllm/model_executor/layers/utils.py: apply_penalties):
//   1. repetition (CTRL, Keskar et al. 2019, as in HF RepetitionPenaltyLogitsProcessor), once per
//      distinct token of prompt + output:   l = l > 0 ? l / r : l * r
//   2. frequency and presence (OpenAI API), output tokens only, c = occurrences in the output:
//      l -= frequency * c + presence * (c > 0)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/plugin_abi.h"

namespace tessera::sampler {

// Per-thread scratch, reused across rows. Between rows every entry is zero again, so a row costs
// O(prompt + output), not O(vocab).
struct PenaltyScratch {
  std::vector<int32_t> output_count;  // [vocab] occurrences in the output tokens
  std::vector<uint8_t> in_context;    // [vocab] 1 if in prompt or output
  std::vector<int32_t> touched;       // ids whose entries must be reset
};

// False when all three are off (repetition 1, frequency 0, presence 0): the logits are used as is.
[[nodiscard]] bool penalties_active(const ts_sampling_params& p) noexcept;

// logits: [vocab] a copy of the row's raw logits, penalised in place (each formula evaluated in
// double, stored as float like HF's fp32 logits). Token ids must have been validated.
void apply_penalties(const ts_sampler_row& row, std::span<float> logits, PenaltyScratch& scratch);

}  // namespace tessera::sampler
