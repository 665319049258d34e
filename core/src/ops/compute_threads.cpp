#include "ops/compute_threads.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::ops {
namespace {

int hardware_threads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::atomic<int> g_threads{hardware_threads()};

// One job a helper may take part in.
struct PartFn {
  void (*call)(const void* ctx, int part);
  const void* ctx;
};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// How long a helper keeps spinning for its next job before it sleeps. A forward issues GEMMs a
// few to a few hundred microseconds apart, and waking a sleeping thread costs tens of
// microseconds; the plugins' parallel work runs on these helpers too, so a spinning helper takes
// a core from nobody. Measured on the 50m step at 64 sequences (3 interleaved runs each): 50 us
// 23.8-29.4 ms, 200 us 23.2-25.5, 1 ms 23.2-23.7; batch-1 decode unchanged. An idle engine spins
// at most this long after its last step.
constexpr auto kSpinFor = std::chrono::milliseconds(1);

// One helper thread. The owner posts job s (post), works on it itself, then either takes job s
// back before the helper started it or waits for the helper to finish it (finish). Whoever moves
// `claimed_` from s - 1 to s (one compare-exchange) runs job s; `claimed_` only grows, so a
// helper that read an old job number can never claim a newer job by mistake, nor an older one
// twice. A job's context lives on the owner's stack: the helper reads it only after claiming,
// and the owner never returns while a claimed job runs. Between jobs the helper also runs the
// owner's tasks (add_task). `signal_` changes with every job and task: it is what a sleeping
// helper waits on.
class Helper {
 public:
  Helper() : thread_([this] { loop(); }) {}
  Helper(const Helper&) = delete;
  Helper& operator=(const Helper&) = delete;
  ~Helper() {
    stop_.store(true, std::memory_order_release);
    posted_.fetch_add(1, std::memory_order_release);
    wake();
    thread_.join();
  }

  void post(PartFn fn, int part) {
    fn_ = fn;
    part_ = part;
    // release: a helper that reads this job number sees fn_ and part_
    posted_.store(posted_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    wake();
  }

  // After the owner's own share: returns at once when the helper had not started the job (it
  // never will), else when it has finished.
  void finish() {
    const uint32_t job = posted_.load(std::memory_order_relaxed);
    uint32_t expected = job - 1;
    if (claimed_.compare_exchange_strong(expected, job, std::memory_order_acq_rel)) {
      return;
    }
    while (done_.load(std::memory_order_acquire) != job) {
      cpu_relax();
    }
  }

  // True when the helper sleeps with no task queued: waking it would cost the caller what the
  // task itself costs, and add a hop, so the caller had better run the task itself (with no
  // earlier task waiting, that keeps the order).
  [[nodiscard]] bool asleep_without_tasks() const {
    return sleeping_.load(std::memory_order_acquire) && !has_tasks_.load(std::memory_order_acquire);
  }

  void add_task(HelperTask task) {
    {
      const std::lock_guard lock(tasks_mutex_);
      tasks_.push_back(task);
    }
    has_tasks_.store(true, std::memory_order_release);
    wake();
  }

 private:
  // A system call only when the helper sleeps (libstdc++ counts the waiters).
  void wake() {
    signal_.fetch_add(1, std::memory_order_release);
    signal_.notify_one();
  }

  // Runs the queued tasks in order; with `until_job`, returns early once a job is posted (jobs
  // first: a task must not take the helper from its owner's parallel work; the rest run in the
  // next gap between jobs).
  void run_tasks(uint32_t seen, bool until_job) {
    for (;;) {
      HelperTask t{};
      {
        const std::lock_guard lock(tasks_mutex_);
        if (tasks_.empty()) {
          has_tasks_.store(false, std::memory_order_relaxed);
          return;
        }
        t = tasks_.front();
        tasks_.pop_front();
      }
      t.run(t.ctx);
      if (until_job && posted_.load(std::memory_order_acquire) != seen) {
        return;
      }
    }
  }

  void loop() {
    uint32_t seen = 0;
    for (;;) {
      const auto start = std::chrono::steady_clock::now();
      for (unsigned spins = 1;; ++spins) {
        const uint32_t signal = signal_.load(std::memory_order_acquire);
        if (has_tasks_.load(std::memory_order_acquire)) {
          run_tasks(seen, true);
        }
        if (posted_.load(std::memory_order_acquire) != seen) {
          break;
        }
        cpu_relax();
        if (spins % 256 == 0 && std::chrono::steady_clock::now() - start > kSpinFor) {
          sleeping_.store(true, std::memory_order_release);
          signal_.wait(signal, std::memory_order_acquire);  // until a job or a task
          sleeping_.store(false, std::memory_order_release);
        }
      }
      if (stop_.load(std::memory_order_acquire)) {
        run_tasks(seen, false);  // the owner is exiting: what it handed over still runs
        return;
      }
      const uint32_t job = posted_.load(std::memory_order_acquire);
      seen = job;
      uint32_t expected = job - 1;
      if (!claimed_.compare_exchange_strong(expected, job, std::memory_order_acq_rel)) {
        continue;  // the owner took it back (or a newer job is already posted: seen next turn)
      }
      fn_.call(fn_.ctx, part_);
      done_.store(job, std::memory_order_release);
    }
  }

  std::atomic<uint32_t> posted_{0};   // the newest job number (written by the owner)
  std::atomic<uint32_t> claimed_{0};  // the newest job number someone runs
  std::atomic<uint32_t> done_{0};     // the newest job the helper finished
  std::atomic<uint32_t> signal_{0};   // bumped by every job and task
  std::atomic<bool> stop_{false};
  std::atomic<bool> has_tasks_{false};
  std::atomic<bool> sleeping_{false};  // in signal_.wait (or about to be)
  std::mutex tasks_mutex_;
  std::deque<HelperTask> tasks_;  // guarded by tasks_mutex_
  PartFn fn_{};
  int part_ = 0;
  std::thread thread_;  // last: it starts once the fields above exist
};

// The calling thread's own helpers (see the header's rules).
std::vector<std::unique_ptr<Helper>>& my_helpers() {
  thread_local std::vector<std::unique_ptr<Helper>> helpers;
  return helpers;
}

}  // namespace

void set_compute_threads(int n) {
  n = std::max(1, n);
  g_threads.store(n, std::memory_order_relaxed);
  openblas_set_num_threads(n);
}

namespace {
// True on a thread while it runs parallel_for items: a nested parallel_for (an expert's GEMM in a
// loop shared over experts) then runs on that thread alone instead of waking helpers of its own.
thread_local bool t_in_items = false;

thread_local bool t_bf16_activations = false;

// A helper running items: nested parallel_for stays on it, and it computes as the caller does.
struct InItems {
  bool before = t_in_items;
  Bf16ActivationScope precision;
  explicit InItems(bool bf16) : precision(bf16) { t_in_items = true; }
  ~InItems() { t_in_items = before; }
};
}  // namespace

Bf16ActivationScope::Bf16ActivationScope(bool on) : before_(t_bf16_activations) {
  t_bf16_activations = on;
}
Bf16ActivationScope::~Bf16ActivationScope() { t_bf16_activations = before_; }
bool bf16_activations() { return t_bf16_activations; }

int compute_threads() { return t_in_items ? 1 : g_threads.load(std::memory_order_relaxed); }

void parallel_for(int64_t items, int threads, ItemFn body) {
  if (t_in_items) {  // nested: this thread already is one of a parallel_for's workers
    for (int64_t i = 0; i < items; ++i) {
      body.call(body.ctx, i);
    }
    return;
  }
  struct Shared {
    std::atomic<int64_t> next{0};
    int64_t items;
    ItemFn body;
    bool bf16;
  } shared{{}, items, body, t_bf16_activations};
  auto drain = [](const void* ctx, int /*part*/) {
    auto& s = *static_cast<Shared*>(const_cast<void*>(ctx));
    const InItems in_items(s.bf16);
    for (int64_t i = s.next.fetch_add(1, std::memory_order_relaxed); i < s.items;
         i = s.next.fetch_add(1, std::memory_order_relaxed)) {
      s.body.call(s.body.ctx, i);
    }
  };
  const int helpers_needed =
      static_cast<int>(std::clamp<int64_t>(items, 1, std::max(1, threads))) - 1;
  auto& helpers = my_helpers();
  while (static_cast<int>(helpers.size()) < helpers_needed) {
    helpers.push_back(std::make_unique<Helper>());
  }
  for (int h = 0; h < helpers_needed; ++h) {
    helpers[static_cast<size_t>(h)]->post(PartFn{drain, &shared}, h + 1);
  }
  drain(&shared, 0);
  for (int h = 0; h < helpers_needed; ++h) {
    helpers[static_cast<size_t>(h)]->finish();
  }
}

void run_on_helper(HelperTask task) {
  auto& helpers = my_helpers();
  if (t_in_items || helpers.empty() || helpers.front()->asleep_without_tasks()) {
    task.run(task.ctx);
    return;
  }
  helpers.front()->add_task(task);  // wakes it too, should it have just gone to sleep
}

}  // namespace tessera::ops
