// One frontend request on its way through the engine: its n choices (one engine request each),
// their output turned into the events frontends read (docs/http.md "Events"):
//   {"type":"delta","index":i, "text" | "reasoning","content","tool_calls", "token_ids",
//    "logprobs"}
//   {"type":"finish","index":i,"finish_reason","stop_reason"}
//   {"type":"error","status","message"}                          (a choice failed in the engine)
//   {"type":"done","usage":{prompt_tokens,completion_tokens,reasoning_tokens,cached_tokens}}
// "done" is always last and comes exactly once, also after an abort; nothing follows it. On a
// live A/B server every event also carries "arm":"<name>", and each finished choice is recorded
// in the arms' running comparison.
//
// Thread-safety: on_engine_event may be called from any engine thread; events for one request
// are delivered to the frontend one at a time (a mutex), in order.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comparison/live_comparison.hpp"
#include "engine/request.hpp"
#include "serve/chat_output.hpp"
#include "serve/serve_metrics.hpp"
#include "serve/serve_request.hpp"
#include "tessera/plugin_abi.h"
#include "tokenizer/tokenizer.hpp"

namespace tessera::serve {

// The A/B arm a request runs on (empty name and no comparison without A/B).
struct StreamArm {
  std::string name;
  ab::LiveComparison* comparison = nullptr;
  std::size_t index = 0;
};

class RequestStream {
 public:
  RequestStream(const ServeRequest& request, ts_event_callback on_event, void* user,
                const tokenizer::Tokenizer& tokenizer, ServeMetrics& metrics,
                int64_t default_max_tokens, StreamArm arm = {});

  // Choice `index` was queued as engine request `engine_id`.
  void set_engine_id(std::size_t index, uint64_t engine_id);
  [[nodiscard]] std::vector<uint64_t> engine_ids() const;
  // Submitting choice `first` failed: the frontend hears nothing more; choices from `first` on
  // count as finished, earlier ones are aborted by the caller and their events swallowed.
  void abandon_from(std::size_t first);
  void on_engine_event(std::size_t index, const engine::Event& event);
  [[nodiscard]] bool done() const;

 private:
  struct Choice {
    std::optional<uint64_t> engine_id;
    std::optional<ChatOutputSplitter> splitter;
    int64_t tokens = 0;
    bool finished = false;
    std::optional<std::chrono::steady_clock::time_point> first_token;
    std::optional<std::chrono::steady_clock::time_point> last_token;
  };

  void record_outcome(const Choice& c, const engine::Event& event,
                      std::chrono::steady_clock::time_point now);

  void emit(const std::string& json);
  [[nodiscard]] std::string logprobs_json(const engine::Event& event) const;

  mutable std::mutex mutex_;
  const tokenizer::Tokenizer& tokenizer_;
  ServeMetrics& metrics_;
  StreamArm arm_;
  std::string arm_field_;  // "\"arm\":\"<name>\"," spliced into every event, or ""
  ts_event_callback on_event_;
  void* user_;
  bool chat_;
  bool include_stop_str_;
  std::vector<int32_t> stop_token_ids_;
  int64_t prompt_tokens_;
  int64_t max_tokens_;
  std::vector<Choice> choices_;
  std::chrono::steady_clock::time_point submitted_;
  int64_t completion_tokens_ = 0;
  int64_t reasoning_tokens_ = 0;
  int64_t cached_tokens_ = 0;
  std::size_t finished_ = 0;
  bool muted_ = false;
  bool done_ = false;
};

}  // namespace tessera::serve
