// The engine's knobs, normally from the TOML ([scheduler], [limits], [sampler.defaults],
// [executor], model.max_context); docs/config.md documents each key.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.hpp"
#include "generation/repetition_guard.hpp"

namespace tessera::engine {

struct EngineOptions {
  int64_t max_running_sequences = 64;
  int64_t max_batched_tokens = 8192;
  int64_t chunked_prefill_size = 2048;  // 0: a prompt may take the whole token budget
  bool prefix_cache = true;
  int64_t max_context = 0;  // prompt + output; 0: the runtime's max_context
  int64_t max_tokens_limit = 8192;
  int64_t max_logprobs = 20;
  int64_t max_queue = 1024;  // requests waiting for a slot
  SamplingDefaults defaults{1.0, 1.0, 0, 0.0, 1.0, 0.0, 0.0, 4096, -1};
  int tensor_parallel = 1;
  int reduction_parts = 1;               // executor.reduction_parts
  int threads = 0;                       // CPU threads for all ranks (0: hardware threads)
  std::string repetition_mode = "stop";  // [generation.repetition_guard] mode
  generation::RepetitionGuardOptions repetition;
  int64_t max_reasoning_tokens = 0;  // 0: unlimited
  int64_t min_answer_tokens = 0;     // reasoning closes once fewer output tokens than this remain

  static EngineOptions from_config(const Config& config);
};

}  // namespace tessera::engine
