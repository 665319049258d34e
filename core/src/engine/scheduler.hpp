// Continuous batching (docs/engine.md "Scheduling"): every step it decides which sequences run
// and with how many tokens, within max_batched_tokens and max_running_sequences, and makes sure
// the pages they may take exist before the step runs:
//   1. running sequences that decode (one token each), in admission order;
//   2. running sequences still prefilling, a chunk of at most chunked_prefill_size each;
//   3. waiting sequences by (priority, arrival): prefix-cache lookup, then a first chunk.
// When pages are short it evicts prefix-cache leaves, then shrinks a prefill chunk, then
// preempts the lowest-priority running sequence (latest arrival on ties), whose cache is freed
// and recomputed when it is admitted again. Admission never preempts.
// Cache operations go through the Executor (rank 0 at once, other ranks with the next step).
// Owned by the engine loop thread.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "engine/engine_options.hpp"
#include "engine/prefix_cache.hpp"
#include "engine/sequence.hpp"
#include "executor/executor.hpp"

namespace tessera::engine {

struct ScheduledStep {
  std::vector<PlannedChunk> chunks;
  std::vector<Sequence*> sequences;  // [chunks]
  std::vector<Sequence*> failed;     // cannot fit in an empty cache: finish with an error
};

struct SchedulerCounters {
  int64_t preemptions = 0;
  int64_t prefill_tokens = 0;     // prompt (and recomputed) tokens run through the model
  int64_t prefix_hit_tokens = 0;  // tokens skipped thanks to the prefix cache
  int64_t prefix_snapshots = 0;   // snapshots requested
  int64_t prefix_evictions = 0;
};

class Scheduler {
 public:
  Scheduler(const EngineOptions& options, Executor& executor, PrefixCache* prefix_cache);

  void add(Sequence* seq);     // a new request: to the waiting queue
  void remove(Sequence* seq);  // finished or aborted: out of every queue, cache freed
  // The next step into `out`, cleared first; its chunks' buffers are kept from step to step (a
  // decode step would otherwise allocate and free a token list per sequence).
  void schedule(ScheduledStep& out);
  // After the step's forward: cached lengths advance, snapshots become ready.
  void complete(const ScheduledStep& step);
  // The step's forward failed: pending snapshots are dropped (the sequences are removed after).
  void abandon(const ScheduledStep& step);

  size_t running() const { return running_.size(); }
  size_t waiting() const { return waiting_.size(); }
  const SchedulerCounters& counters() const { return counters_; }

 private:
  struct WaitingOrder {
    bool operator()(const Sequence* a, const Sequence* b) const {
      return a->request.priority != b->request.priority ? a->request.priority < b->request.priority
                                                        : a->arrival < b->arrival;
    }
  };
  struct Candidate {
    Sequence* seq;
    int64_t tokens;
    PageDemand demand;
  };

  // The step being planned, with running totals (tokens, pages) so that each decision is O(1).
  struct Plan {
    std::vector<Candidate> items;
    int64_t tokens = 0;
    PageDemand pages;
    void add(const Candidate& c);
    void drop(const Sequence* seq);  // a preempted sequence leaves the plan
  };

  // Largest n' <= n (>= 1) whose pages fit next to `planned`, making room as allowed; 0 if none.
  int64_t fit(Sequence* seq, int64_t n, Plan& planned, bool may_preempt);
  void preempt(Sequence* seq);
  void free_kv(Sequence* seq);
  bool evict_prefix();
  Sequence* preemption_victim() const;
  void admit(Sequence* seq);  // creates its cache (prefix hit or empty)
  // The snapshots a chunk of n tokens passes, into points (cleared first).
  void snapshot_points(Sequence* seq, int64_t n, std::vector<SnapshotPoint>& points);

  const EngineOptions& options_;
  Executor& executor_;
  PrefixCache* prefix_;             // null: prefix caching off
  std::vector<Sequence*> running_;  // admission order
  std::vector<Sequence*> pass_;     // schedule() scratch: running_ as a pass started
  Plan plan_;                       // schedule() scratch: the step being planned
  std::set<Sequence*, WaitingOrder> waiting_;
  SchedulerCounters counters_;
};

}  // namespace tessera::engine
