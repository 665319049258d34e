#include "row_pool.hpp"

namespace tessera::sampler {

RowPool::RowPool(int workers) {
  threads_.reserve(workers > 1 ? workers - 1 : 0);
  for (int w = 1; w < workers; ++w) {
    threads_.emplace_back([this, w] { work(w); });
  }
}

RowPool::~RowPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) {
    t.join();
  }
}

void RowPool::drain(int worker) {
  for (;;) {
    if (failed_.load(std::memory_order_relaxed)) {
      return;
    }
    const int64_t index = next_.fetch_add(1, std::memory_order_relaxed);
    if (index >= n_) {
      return;
    }
    try {
      (*task_)(index, worker);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) {
        error_ = std::current_exception();
      }
      failed_.store(true, std::memory_order_relaxed);
    }
  }
}

void RowPool::work(int worker) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) {
        return;
      }
      seen = generation_;
    }
    drain(worker);
    {
      std::lock_guard lock(mutex_);
      --busy_;
    }
    done_.notify_one();
  }
}

void RowPool::run(int64_t n, const Task& task) {
  if (threads_.empty() || n <= 1) {
    for (int64_t i = 0; i < n; ++i) {
      task(i, 0);
    }
    return;
  }
  {
    std::lock_guard lock(mutex_);
    task_ = &task;
    n_ = n;
    next_.store(0, std::memory_order_relaxed);
    failed_.store(false, std::memory_order_relaxed);
    error_ = nullptr;
    busy_ = static_cast<int>(threads_.size());
    ++generation_;
  }
  wake_.notify_all();
  drain(0);
  std::exception_ptr error;
  {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return busy_ == 0; });
    task_ = nullptr;
    error = error_;
  }
  if (error) {
    std::rethrow_exception(error);
  }
}

}  // namespace tessera::sampler
