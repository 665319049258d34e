#include "ops/compute_threads.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
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

// One helper thread. The owner posts a job (post), works on it itself, then either takes the job
// back before the helper started it (cancel) or waits for the helper to finish (wait). A job's
// context lives on the owner's stack: the helper touches it only after claiming the job, and the
// owner never returns while a claimed job runs.
class Helper {
 public:
  Helper() : thread_([this] { loop(); }) {}
  Helper(const Helper&) = delete;
  Helper& operator=(const Helper&) = delete;
  ~Helper() {
    stop_.store(true, std::memory_order_release);
    claim_.store(kFree, std::memory_order_release);
    bump();
    thread_.join();
  }

  void post(PartFn fn, int part) {
    fn_ = fn;
    part_ = part;
    claim_.store(kFree, std::memory_order_relaxed);
    bump();  // release: the helper sees fn_, part_ and claim_ with the new sequence number
  }

  // After the owner's own share: returns at once when the helper had not started the job (it
  // never will), else when it has finished.
  void finish() {
    if (claim_.exchange(kOwner, std::memory_order_acq_rel) == kFree) {
      return;
    }
    const uint32_t posted = seq_.load(std::memory_order_relaxed);
    while (done_.load(std::memory_order_acquire) != posted) {
      cpu_relax();
    }
  }

 private:
  static constexpr uint32_t kFree = 0, kHelper = 1, kOwner = 2;

  void bump() {
    seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    seq_.notify_one();
  }

  void loop() {
    uint32_t seen = 0;
    for (;;) {
      const auto start = std::chrono::steady_clock::now();
      for (unsigned spins = 1; seq_.load(std::memory_order_acquire) == seen; ++spins) {
        cpu_relax();
        if (spins % 256 == 0 && std::chrono::steady_clock::now() - start > kSpinFor) {
          seq_.wait(seen, std::memory_order_acquire);
        }
      }
      seen = seq_.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_acquire)) {
        return;
      }
      if (claim_.exchange(kHelper, std::memory_order_acq_rel) != kFree) {
        continue;  // taken back
      }
      // Claimed: the owner cannot post again until done_, so this is the current job.
      seen = seq_.load(std::memory_order_acquire);
      fn_.call(fn_.ctx, part_);
      done_.store(seen, std::memory_order_release);
    }
  }

  std::atomic<uint32_t> seq_{0};         // jobs posted so far (written by the owner)
  std::atomic<uint32_t> done_{0};        // the last job the helper finished
  std::atomic<uint32_t> claim_{kOwner};  // who runs the current job
  std::atomic<bool> stop_{false};
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

int compute_threads() { return g_threads.load(std::memory_order_relaxed); }

void parallel_for(int64_t items, int threads, ItemFn body) {
  struct Shared {
    std::atomic<int64_t> next{0};
    int64_t items;
    ItemFn body;
  } shared{{}, items, body};
  auto drain = [](const void* ctx, int /*part*/) {
    auto& s = *static_cast<Shared*>(const_cast<void*>(ctx));
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

}  // namespace tessera::ops
