#include "engine/engine_options.hpp"

namespace tessera::engine {

namespace {

// Every value of `config` the options carry except model.max_context.
void copy_values(const Config& config, EngineOptions& o) {
  o.max_running_sequences = config.scheduler.max_running_sequences;
  o.max_batched_tokens = config.scheduler.max_batched_tokens;
  o.chunked_prefill_size = config.scheduler.chunked_prefill_size;
  o.prefix_cache = config.scheduler.prefix_cache;
  o.max_tokens_limit = config.limits.max_tokens;
  o.max_logprobs = config.limits.max_logprobs;
  o.max_queue = config.limits.max_queue;
  o.defaults = config.sampler.defaults;
  o.tensor_parallel = static_cast<int>(config.executor.tensor_parallel);
  o.reduction_parts = static_cast<int>(config.executor.reduction_parts);
  o.threads = static_cast<int>(config.executor.threads);
  const auto& guard = config.generation.repetition_guard;
  o.repetition_mode = guard.mode;
  if (guard.min_repeats > 0) o.repetition.min_repeats = guard.min_repeats;
  if (guard.max_ngram > 0) o.repetition.max_ngram = guard.max_ngram;
  o.max_reasoning_tokens = config.generation.max_reasoning_tokens;
  o.min_answer_tokens = config.generation.min_answer_tokens;
}

}  // namespace

EngineOptions::EngineOptions() {
  static const Config defaults = default_config();
  copy_values(defaults, *this);
}

EngineOptions EngineOptions::from_config(const Config& config) {
  EngineOptions o;
  copy_values(config, o);
  o.max_context = config.model.max_context;
  return o;
}

}  // namespace tessera::engine
