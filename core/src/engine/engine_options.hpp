// The engine's knobs, normally from the TOML ([scheduler], [limits], [sampler.defaults],
// [executor], model.max_context); docs/config.md documents each key.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.hpp"
#include "generation/repetition_guard.hpp"

namespace tessera::engine {

// The configuration schema (config_schema.cpp) is the one source of every default:
// EngineOptions{} holds the options of a configuration that sets nothing (default_config()).
struct EngineOptions {
  EngineOptions();  // the schema's defaults; max_context 0

  int64_t max_running_sequences{};  // [scheduler]
  int64_t max_batched_tokens{};
  int64_t chunked_prefill_size{};  // 0: a prompt may take the whole token budget
  bool prefix_cache{};
  // Prompt + output; 0: the runtime's max_context. Not a default of its own: from_config sets
  // model.max_context, the value the runtime got from the same file.
  int64_t max_context = 0;
  int64_t max_tokens_limit{};  // [limits] max_tokens
  int64_t max_logprobs{};
  int64_t max_queue{};  // requests waiting for a slot
  SamplingDefaults defaults;
  int tensor_parallel{};  // [executor]
  int reduction_parts{};
  int threads{};                // CPU threads for all ranks (0: hardware threads)
  std::string repetition_mode;  // [generation.repetition_guard] mode
  generation::RepetitionGuardOptions repetition;
  int64_t max_reasoning_tokens{};  // 0: unlimited
  int64_t min_answer_tokens{};     // reasoning closes once fewer output tokens than this remain

  static EngineOptions from_config(const Config& config);
};

}  // namespace tessera::engine
