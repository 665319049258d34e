// The serving engine (docs/engine.md): requests are submitted from any thread and answered as a
// stream of events; one engine-loop thread owns the scheduler, the prefix cache, rank 0 of the
// tensor-parallel executor and every Sequence. Per step the loop takes new requests and aborts,
// schedules (continuous batching with chunked prefill mixed into decode), runs the model on every
// rank, samples rank 0's logits through the sampler plugin and applies the token stops; the text
// side of the events (detokenization, stop strings) is rendered one step behind, while the next
// forward runs (output_stage.hpp). Events are delivered on a separate dispatcher thread.
//
// Thread-safety: submit(), abort(), stats(), wait_idle() and the accessors may be called from any
// thread at any time. Destroying the engine aborts what is in flight (finish reason "abort").
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/batch_sampler.hpp"
#include "engine/engine_options.hpp"
#include "engine/event_dispatcher.hpp"
#include "engine/output_stage.hpp"
#include "engine/prefix_cache.hpp"
#include "engine/request.hpp"
#include "engine/scheduler.hpp"
#include "engine/sequence.hpp"
#include "engine/token_output.hpp"
#include "executor/executor.hpp"
#include "runtime/runtime.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::engine {

struct EngineStats {
  int64_t steps = 0;
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t in_flight = 0;  // submitted, not finished
  int64_t finished = 0;
  int64_t main_pages_total = 0, main_pages_free = 0;
  int64_t main_pages_cached = 0;  // held only by the prefix cache (reclaimable), not free
  int64_t indexer_pages_total = 0, indexer_pages_free = 0;
  int64_t prefix_nodes = 0;  // prefix-cache blocks held (ready)
  int64_t preemptions = 0;
  int64_t prefill_tokens = 0;     // tokens prefilled (prompts, recomputation)
  int64_t prefix_hit_tokens = 0;  // tokens whose prefill the prefix cache saved
  int64_t prefix_evictions = 0;   // prefix-cache blocks dropped to make room
  int64_t generated_tokens = 0;
  int64_t repetition_hits = 0;  // tokens at which a repetition guard saw a loop
  int64_t batched_tokens = 0;   // tokens run through the model
  double forward_seconds = 0;   // all ranks' forward, as seen by rank 0
  double host_seconds = 0;      // the loop's other time while it has work (never its waits)
  double schedule_seconds = 0;  // parts of host_seconds: admissions, aborts, the step's plan
  double sample_seconds = 0;    // the sampler plugin
  double output_seconds = 0;    // token stops, events, publishing stats and events
  // Not host time: rendering the text of events (detokenization, stop strings, the repetition
  // guard) on the loop's compute helper while the next forward runs (output_stage.hpp). When it
  // runs on the loop instead (no helper, or no forward follows), it is in output_seconds.
  double deferred_output_seconds = 0;
  bool failed = false;  // a tensor-parallel rank failed: no new requests
};

class Engine {
 public:
  // The runtime (weights, plugins, pools) and the tokenizer (may be null: no text, no stop
  // strings) must outlive the engine.
  Engine(Runtime& runtime, const EngineOptions& options,
         const tokenizer::Tokenizer* tokenizer = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates and queues the request; events go to on_event (dispatcher thread). Throws
  // RequestError when refused (invalid, longer than the context limit, larger than the whole
  // cache, queue full, engine failed); nothing is queued or allocated then.
  uint64_t submit(Request request, EventCallback on_event);
  // Finishes the request with reason "abort" and frees its pages within one step. Unknown or
  // finished ids are ignored.
  void abort(uint64_t request_id);

  EngineStats stats() const;
  // Until nothing is in flight (the last finish events may still be on their way to callbacks).
  void wait_idle() const;

  const EngineOptions& options() const { return options_; }
  const dsv4::ModelConfig& model_config() const { return runtime_.model_config(); }
  const tokenizer::Tokenizer* tokenizer() const { return tokenizer_; }
  int64_t max_context() const { return max_context_; }
  int64_t prefix_block_tokens() const { return prefix_block_; }

 private:
  // Throws RequestError (kInvalid: can never fit, kBusy: full now) unless `fan_out` more
  // sequences fit limits.max_queue. Called under mutex_.
  void check_admission(int64_t fan_out) const;
  using Deliveries = std::vector<EventDispatcher::Delivery>;
  void validate(const Request& r) const;
  void loop();
  // One step: schedule, forward (the last iteration's output renders meanwhile), sample, decide.
  // False when no forward ran.
  bool run_step();
  // The step's sampled tokens into their sequences (ready_ order); their text renders next step.
  void decide_tokens(std::span<SampledToken> tokens);
  // The output stage's findings: late finishes (retired here), counters.
  void absorb(OutputStage::Results& results);
  // Takes s out of the scheduler (frees its pages) and counts it finished; its final event is
  // the caller's to queue.
  void retire(Sequence& s);
  void finish(Sequence& s, FinishReason reason, Event event);
  void fail_all(const std::string& error);
  void publish_stats();

  Runtime& runtime_;
  EngineOptions options_;
  const tokenizer::Tokenizer* tokenizer_;
  int64_t max_context_ = 0;
  int64_t prefix_block_ = 0;
  std::vector<int32_t> eos_;
  int32_t think_begin_ = -1, think_end_ = -1;  // <think>, </think> ids (-1: no tokenizer/none)
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<PrefixCache> prefix_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<BatchSampler> sampler_;

  // Engine loop thread only.
  std::unordered_map<uint64_t, std::unique_ptr<Sequence>> sequences_;
  std::vector<uint64_t> finished_;   // leave in_flight at the next publish
  std::vector<uint64_t> erasable_;   // finished before the last publish: erased at the next one,
                                     // once the output stage has rendered their last events
  ScheduledStep step_;               // run_step scratch: the step (buffers kept across steps)
  std::vector<Sequence*> ready_;     // run_step scratch: sequences sampled this step
  std::vector<int64_t> ready_rows_;  // [ready_] their logits rows
  EngineStats loop_stats_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  mutable std::condition_variable idle_;
  std::vector<std::unique_ptr<Sequence>> inbox_;
  std::vector<uint64_t> aborts_;
  bool stopping_ = false;
  bool failed_ = false;
  bool first_token_logged_ = false;  // the start-up line of run_step (engine loop thread)
  int64_t in_flight_ = 0;
  uint64_t next_id_ = 1;
  EngineStats stats_;

  std::unique_ptr<EventDispatcher> dispatcher_;
  std::unique_ptr<OutputStage> output_;  // engine loop thread only
  std::thread loop_thread_;
};

}  // namespace tessera::engine
