// Output one step behind (docs/engine.md "Output one step behind"): the text side of a step's
// tokens — detokenization, stop strings, the repetition guard, the events — is rendered while the
// loop's next iteration schedules and runs its forward, on the loop's first compute helper
// (ops::run_on_helper), which otherwise spins through the forward's serial parts; vLLM's async
// output processing does the same against a GPU. A batch is what one iteration decided; it is
// handed over at the top of the next, after the stats that show those decisions were published. The
// loop keeps what the next schedule needs (decide_token: the token appended, EOS, stop ids,
// length). A stop string or a repetition stop is found one step late: the loop then retires the
// sequence before sampling the row the forward computed for it, so every request's tokens, text and
// usage are those of the synchronous order.
//
// Threading: the loop fills pending() and calls start(), wait() and run_here(). Between start()
// and wait() the started batch, and the text members of its sequences (Sequence "text state"),
// belong to the helper; the loop touches neither. A batch's sequences stay alive until it has been
// rendered (the engine erases a finished sequence one publish later).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "engine/event_dispatcher.hpp"
#include "engine/sequence.hpp"
#include "engine/token_output.hpp"

namespace tessera::engine {

class OutputStage {
 public:
  using Deliveries = std::vector<EventDispatcher::Delivery>;

  // A final event the loop decided (abort, error), or one the stage rendered one step late.
  struct Finished {
    Sequence* seq = nullptr;
    Event event;
    bool rendered = false;  // usage.repetition_hits is filled in already
  };
  // What the loop decided between two start()s, in delivery order: a step's tokens, then the final
  // events of sequences the loop ended after them (aborts, errors, late finishes; a sequence may
  // have a token and then its abort, never a final event and then a token).
  struct Batch {
    std::vector<DecidedToken> tokens;
    std::vector<Finished> finished;
    bool empty() const { return finished.empty() && tokens.empty(); }
  };
  struct Results {
    // Sequences ended by their text (a stop string, a repetition stop, a rendering error) at a
    // token the loop did not see as final: the loop retires them and delivers these events.
    std::vector<Finished> late;
    int64_t repetition_hits = 0;
    double helper_seconds = 0;  // rendering time spent on the helper (0 when run on the loop)
  };

  explicit OutputStage(EventDispatcher& dispatcher) : dispatcher_(dispatcher) {}
  OutputStage(const OutputStage&) = delete;
  OutputStage& operator=(const OutputStage&) = delete;
  ~OutputStage() { wait(); }

  Batch& pending() { return batches_[pending_]; }
  bool has_pending() const { return !batches_[pending_].empty(); }

  // Hands the pending batch to the helper, which renders it and delivers its events; a new
  // pending batch begins. The batch goes as tasks of kChunk tokens, and the helper takes its
  // owner's parallel work first (ops::run_on_helper): rendering fills the gaps between the
  // forward's parallel parts instead of holding the helper from them. Without a helper (or with
  // one asleep) it runs here, at once.
  void start();
  // Until the started batch (if any) is rendered and delivered; what it found.
  Results& wait();
  // Renders the pending batch on this thread; its events go to `out` (the caller posts them after
  // publishing the stats they follow).
  Results& run_here(Deliveries& out);

 private:
  static constexpr size_t kChunk = 8;  // tokens per helper task (~5-8 us cold)
  struct Chunk {
    OutputStage* stage = nullptr;
    Batch* batch = nullptr;
    size_t begin = 0, end = 0;
    bool last = false;
  };
  static void run_chunk(void* chunk);
  void render_tokens(Batch& batch, size_t begin, size_t end, Deliveries& out);
  // The batch's final events (after its tokens were rendered); the batch is empty afterwards.
  void finish_batch(Batch& batch, Deliveries& out);

  EventDispatcher& dispatcher_;
  Batch batches_[2];
  int pending_ = 0;
  bool started_ = false;
  std::thread::id starter_;
  std::vector<Chunk> chunks_;  // the started batch's tasks (alive until it is done)
  std::atomic<bool> done_{false};
  Deliveries deliveries_;  // the helper's
  Results results_;
};

}  // namespace tessera::engine
