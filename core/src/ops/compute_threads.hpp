// How many threads one dense op (a GEMM) may use, and the helpers that run its parts.
//
// Threading rules (TurboMind style, written down):
// - The count is process-wide, like OpenBLAS's (set_compute_threads sets both): the executor sets
//   it to threads / tensor_parallel, the offline A/B runner before each arm's turn.
// - Helper threads belong to the thread that calls parallel_for: each calling thread (the engine
//   loop, a tensor-parallel rank) lazily gets its own helpers, so ranks never share or wait on one
//   another's helpers. Helpers live until their owner exits.
// - A helper spins briefly after each part (the next GEMM of a forward usually follows within
//   microseconds), then sleeps on a futex; an idle engine costs no CPU.
// - Items must not throw (the GEMM kernels do not).
// - Tasks (run_on_helper) run on the owner's first helper between its jobs, in the order given;
//   a job posted while tasks are queued goes first (after the task running then).
// - Nesting: inside an item, compute_threads() is 1 and parallel_for runs its items on the calling
//   thread, so a loop shared over experts runs each expert's GEMMs on one thread.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tessera::ops {

// - bf16 activations (Bf16ActivationScope) are a setting of the calling thread; parallel_for
//   carries the caller's setting into its helpers for the items it hands them.

// Sets the thread count for our kernels and for OpenBLAS. n < 1 means 1.
void set_compute_threads(int n);
int compute_threads();

// While one is alive on a thread, linear() / linear_group() there (and in the parallel_for items
// it hands out) round x to bf16 for every weight held in bf16 and multiply on AMX or vdpbf16ps:
// model.dtype = "bf16" on the CPU (docs/config.md). Scopes nest; the destructor restores.
class Bf16ActivationScope {
 public:
  explicit Bf16ActivationScope(bool on);
  ~Bf16ActivationScope();
  Bf16ActivationScope(const Bf16ActivationScope&) = delete;
  Bf16ActivationScope& operator=(const Bf16ActivationScope&) = delete;

 private:
  bool before_;
};
bool bf16_activations();  // on this thread

// A non-owning callable: body(ctx, item).
struct ItemFn {
  void (*call)(const void* ctx, int64_t item);
  const void* ctx;
};

// Runs body(i) for every i in [0, items), each exactly once, on the calling thread and up to
// threads - 1 of its helpers. They take items from a shared counter, so a helper that wakes late
// finds fewer (or none) left and nobody waits for it; the caller returns when all are done. Which
// thread runs an item must not change its result (the GEMM's items are column blocks).
void parallel_for(int64_t items, int threads, ItemFn body);

template <typename F>
void parallel_for(int64_t items, int threads, const F& f) {
  parallel_for(items, threads,
               ItemFn{[](const void* ctx, int64_t i) { (*static_cast<const F*>(ctx))(i); }, &f});
}

// Runs body(first, last) over [0, rows) in contiguous chunks of at least min_rows rows, at most
// one per thread: the caller takes the first chunk and its helper (which starts within a
// microsecond) the next, so consecutive per-token passes give each thread the same rows, and the
// mHC streams (512 KiB at 64 tokens) stay in that core's cache from one pass to the next instead
// of crossing cores (~85 us per MiB on the 2-vCPU Xeon VM). Two chunks per thread, handed out in
// any order, measured 20.72-20.90 ms per 64-sequence 50m step against 20.19-20.33 (16 interleaved
// pairs). Large chunks also vectorise better (the batched Sinkhorn over a chunk's tokens). For
// per-row work whose result must not depend on the split: each row is computed alone, on any
// thread.
template <typename F>
void for_each_row_chunk(int64_t rows, int64_t min_rows, const F& body) {
  if (rows <= 0) {
    return;
  }
  constexpr int64_t kChunksPerThread = 1;
  const int threads = compute_threads();
  const int64_t most = std::max<int64_t>(1, threads * kChunksPerThread);
  const int64_t chunks = std::clamp<int64_t>(rows / std::max<int64_t>(min_rows, 1), 1, most);
  const int64_t per_chunk = (rows + chunks - 1) / chunks;
  parallel_for(chunks, threads, [&](int64_t c) {
    body(std::min(rows, c * per_chunk), std::min(rows, (c + 1) * per_chunk));
  });
}

// A non-owning call: run(ctx).
struct HelperTask {
  void (*run)(void* ctx);
  void* ctx;
};

// Runs task soon on the calling thread's first helper while it is between parallel_for jobs (it
// spins there for a while after each job, so it usually starts within microseconds; a job posted
// meanwhile is taken before the next queued task, so tasks fill the gaps between jobs); on the
// calling thread itself, at once, when it has no helper, is one, or its helper sleeps (no job for
// a millisecond: waking it would cost as much as the task). For a hand-off whose system call
// should not stall the caller: the engine loop's wake-up of its event dispatcher costs 10-40 us
// on a 2-vCPU VM (the woken thread preempts the waker), a helper spinning through the loop's
// serial part pays it instead. The task must be short, must not throw or call parallel_for, and
// its ctx must live until it ran; a helper runs the tasks still queued when its owner exits.
void run_on_helper(HelperTask task);

}  // namespace tessera::ops
