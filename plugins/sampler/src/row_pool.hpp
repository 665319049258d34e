// A fixed team of worker threads for one sampler instance. run(n, task) calls task(index, worker)
// once for every index in [0, n), spread over the calling thread (worker 0) and the pool's
// threads; indices are handed out one by one, so the assignment varies from run to run and the
// task must not depend on it except to pick per-worker scratch.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::sampler {

class RowPool {
 public:
  using Task = std::function<void(int64_t index, int worker)>;

  explicit RowPool(int workers);  // workers >= 1, counting the calling thread
  ~RowPool();
  RowPool(const RowPool&) = delete;
  RowPool& operator=(const RowPool&) = delete;

  [[nodiscard]] int workers() const noexcept { return static_cast<int>(threads_.size()) + 1; }

  // Blocks until every index has run. One run at a time (the caller serialises). Rethrows the
  // first exception a task threw, after all workers have stopped.
  void run(int64_t n, const Task& task);

 private:
  void work(int worker);
  void drain(int worker);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  uint64_t generation_ = 0;  // bumped per run; workers wait for a new one
  bool stopping_ = false;
  int busy_ = 0;  // pool threads still inside the current run
  const Task* task_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> next_{0};  // next index to hand out
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;  // under mutex_
  std::vector<std::thread> threads_;
};

}  // namespace tessera::sampler
