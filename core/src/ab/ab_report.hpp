// What one A/B run measured, as plain data: every generation of both arms (free-running) and
// every position scored by both arms (teacher-forced). Summaries are derived from it
// (ab_summary.hpp); the JSON, terminal and HTML writers only format it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ab/divergence.hpp"
#include "config/config.hpp"

namespace tessera::ab {

struct AbOptions {
  std::string prompts_path;
  int64_t max_tokens = 64;  // per generation
  int64_t seeds = 1;        // runs per prompt, seeds seed_base .. seed_base + seeds - 1
  uint64_t seed_base = 0;
  bool warmup = true;  // one short untimed generation per arm first (page faults, caches)
};

struct ArmDescription {
  std::string name;  // "A" | "B"
  std::string config_path, model_dir;
  std::string kv_plugin, attention_plugin, sampler_plugin;
  std::string
      sampler_options;  // as the arm's sampler got them (comparison/coupled_draw.hpp adds a draw)
  int64_t kv_bytes_per_entry = 0;
  SamplingDefaults sampling;
  std::map<std::string, std::string> sampling_source;
  std::string repetition_mode;
  bool synthetic_tokenizer = false;
  int64_t tensor_parallel = 1;
};

// One generate() call of one arm.
struct ArmRun {
  std::vector<int32_t> tokens;  // generated, without the stop token
  std::string text;
  std::string finish_reason;  // "stop" | "length" | "repetition"
  int64_t repetition_hits = 0;
  int64_t prompt_tokens = 0;
  double ttft_s = 0;    // prompt prefill (the first token is sampled right after)
  double decode_s = 0;  // sampling every token + the decode steps between them
  double tokens_per_s() const {
    return decode_s > 0 ? static_cast<double>(tokens.size()) / decode_s : 0.0;
  }
};

// Both arms on one prompt with one seed.
struct RunPair {
  size_t prompt = 0;  // index into AbReport::prompts
  uint64_t seed = 0;
  ArmRun a, b;
  bool identical = false;         // same tokens and finish reason
  int64_t first_divergence = -1;  // first output index where they differ; -1 when identical
};

// One distinct sequence (prompt + arm A's output) scored by both arms.
struct ScoredSequence {
  size_t prompt = 0;
  std::vector<uint64_t> seeds;  // the seeds whose arm-A output this is
  int64_t prompt_tokens = 0;
  std::vector<int32_t> continuation;
  std::vector<PositionDivergence> positions;  // [prompt_tokens + continuation.size()]
};

struct PromptInfo {
  std::string id, kind;
  int64_t tokens = 0;
};

struct AbReport {
  AbOptions options;
  std::array<ArmDescription, 2> arms;
  std::vector<std::array<std::string, 3>> differences;  // key, A, B
  bool shared_weights = false;
  // "runtime": generate() and one-prefill scoring on each arm's Runtime (single rank);
  // "engine": an arm runs tensor-parallel, so both generate through the engine and score through
  // executors, one token per step (ab_runner.hpp).
  std::string path = "runtime";
  std::vector<PromptInfo> prompts;
  std::vector<RunPair> runs;
  std::vector<ScoredSequence> sequences;
  double wall_s = 0;
};

// First output index where two generations differ (a shorter one that is a prefix of the other
// differs at its length); -1 when tokens are equal.
int64_t first_divergence(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

}  // namespace tessera::ab
