// Single-sequence generation on a Runtime: prefill the prompt, then sample token by token through
// the sampler plugin until EOS, a stop id, max_tokens or the context limit. Text is streamed
// through an incremental, UTF-8-safe detokenizer. (`tessera generate`; the engine (engine/) is
// the batched, multi-request path.)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "generation/repetition_guard.hpp"
#include "runtime/runtime.hpp"
#include "tessera/plugin_abi.h"
#include "tokenizer/tokenizer.hpp"

namespace tessera {

struct GenerateRequest {
  std::vector<int32_t> prompt;
  ts_sampling_params sampling{};
  int64_t max_tokens = 256;
  std::vector<int32_t> stop_ids;         // besides the model's EOS ids
  std::string repetition_mode = "stop";  // "off" | "warn" (count only) | "stop"
  generation::RepetitionGuardOptions repetition;
};

struct GenerateResult {
  std::vector<int32_t> tokens;
  std::string text;
  std::string finish_reason;    // "stop" | "length" | "repetition"
  int64_t repetition_hits = 0;  // tokens at which the guard saw a loop (warn mode counts on)
  int64_t prompt_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
};

// Sampling parameters with every feature off (greedy unless temperature is set).
ts_sampling_params neutral_sampling();

GenerateResult generate(Runtime& runtime, const tokenizer::Tokenizer& tokenizer,
                        const GenerateRequest& request,
                        const std::function<void(std::string_view)>& on_text = {});

}  // namespace tessera
