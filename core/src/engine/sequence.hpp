// The engine loop's record of one request: its tokens (prompt + output so far), how many of them
// are in the cache on the ranks, its place in the prefix-cache tree, and its output state
// (detokenizer, stop matcher, counters). Owned by the engine loop thread; its text state (below) is
// touched only by the output stage, which renders on the loop's compute helper while a forward
// runs (output_stage.hpp). The loop reads the rest of a sequence meanwhile, never the text state.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.hpp"
#include "engine/stop_matcher.hpp"
#include "generation/repetition_guard.hpp"
#include "tessera/plugin_abi.h"
#include "tokenizer/incremental_detokenizer.hpp"

namespace tessera {
class SequenceKv;
}

namespace tessera::engine {

enum class SequenceState { kWaiting, kRunning, kFinished };

struct Sequence {
  uint64_t id = 0;
  uint64_t arrival = 0;  // submission order (ties of priority)
  Request request;
  std::shared_ptr<const EventCallback> on_event;
  ts_sampling_params params{};
  int64_t max_tokens = 0;
  int64_t max_total = 0;  // context limit: prompt + output

  std::vector<int32_t> tokens;  // prompt + output
  int64_t n_prompt = 0;
  SequenceState state = SequenceState::kWaiting;
  // Rank 0's SequenceKv while the sequence has a cache on the ranks (the scheduler's page demand).
  const SequenceKv* kv = nullptr;
  int64_t kv_length = 0;  // tokens whose kv is cached (== rank 0's SequenceKv::length())
  int64_t cached_tokens = 0;
  int64_t preemptions = 0;
  bool admitted_once = false;

  // Prefix-cache cursor: the node whose block ends at cursor_length (0: start of the sequence).
  uint64_t cursor_node = 0;
  int64_t cursor_length = 0;
  bool cursor_valid = true;

  // Text state (the output stage's): detokenizer, stop strings, the degeneration guard
  // (docs/generation.md; it needs a tokenizer). Set at submit, then read-only: request,
  // on_event, params, stop_on_repetition.
  std::unique_ptr<tokenizer::IncrementalDetokenizer> detokenizer;
  StopMatcher stops;
  std::optional<generation::RepetitionGuard> guard;
  bool stop_on_repetition = false;
  int64_t repetition_hits = 0;

  // Thinking budget (the loop's: decide_token).
  bool in_reasoning = false;  // the prompt opened <think> and no </think> came yet
  int64_t reasoning_tokens = 0;
  int64_t max_reasoning_tokens = 0;  // 0: unlimited

  std::chrono::steady_clock::time_point submitted;
  std::optional<std::chrono::steady_clock::time_point> first_scheduled;  // for usage.queue_seconds

  int64_t n_output() const { return static_cast<int64_t>(tokens.size()) - n_prompt; }
  // Tokens not yet in the cache (1 while decoding: the last sampled token).
  int64_t pending_tokens() const { return static_cast<int64_t>(tokens.size()) - kv_length; }
};

}  // namespace tessera::engine
