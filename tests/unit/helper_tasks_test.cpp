// ops::run_on_helper: a task handed to the calling thread's parallel_for helper runs there, between
// jobs, in order; inline where there is no helper or it sleeps; and before the owner's exit
// completes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "ops/compute_threads.hpp"

namespace tessera::ops {
namespace {

struct Record {
  std::atomic<int> runs{0};
  std::atomic<std::thread::id> thread{};
  std::vector<int> order;  // written by the tasks only (one thread runs them)
};

struct Tagged {
  Record* record;
  int tag;
};

void record_run(void* ctx) {
  auto* t = static_cast<Tagged*>(ctx);
  t->record->order.push_back(t->tag);
  t->record->thread.store(std::this_thread::get_id());
  t->record->runs.fetch_add(1);
}

// Gives the calling thread its helper (created by its first parallel_for).
void use_helpers() {
  std::atomic<int64_t> sum{0};
  parallel_for(64, 2, [&](int64_t i) { sum.fetch_add(i); });
  ASSERT_EQ(sum.load(), 64 * 63 / 2);
}

bool wait_for_runs(const Record& r, int n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (r.runs.load() < n) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

class HelperTasks : public ::testing::Test {
 protected:
  void SetUp() override { set_compute_threads(2); }
  void TearDown() override {
    set_compute_threads(static_cast<int>(std::thread::hardware_concurrency()));
  }
};

TEST_F(HelperTasks, RunOnTheHelperNotTheCaller) {
  // A fresh owner's helper spins right after its first job. (Retried with a new owner: on a busy
  // machine the owner may lose its core for longer than the helper spins, and then a sleeping
  // helper rightly leaves the task to the owner.)
  bool on_helper = false;
  for (int attempt = 0; attempt < 10 && !on_helper; ++attempt) {
    std::thread owner([&] {
      use_helpers();
      Record r;
      Tagged t{&r, 1};
      run_on_helper({record_run, &t});
      ASSERT_TRUE(wait_for_runs(r, 1)) << "the task never ran";
      on_helper = r.thread.load() != std::this_thread::get_id();
    });
    owner.join();
  }
  EXPECT_TRUE(on_helper) << "no task ran on a helper in 10 fresh owners";
}

TEST_F(HelperTasks, ASleepingHelperIsNotWokenForATask) {
  std::thread owner([] {
    use_helpers();
    // The helper spins 1 ms after its last job, then sleeps on a futex.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Record r;
    Tagged t{&r, 1};
    run_on_helper({record_run, &t});
    EXPECT_EQ(r.runs.load(), 1) << "not run at once";
    EXPECT_EQ(r.thread.load(), std::this_thread::get_id()) << "woke the sleeping helper for it";
    use_helpers();  // jobs still work after it
  });
  owner.join();
}

TEST_F(HelperTasks, RunInTheOrderGiven) {
  std::thread owner([] {
    use_helpers();
    Record r;
    std::vector<Tagged> tags;
    tags.reserve(100);
    for (int i = 0; i < 100; ++i) {
      tags.push_back({&r, i});
    }
    for (Tagged& t : tags) {
      run_on_helper({record_run, &t});
      if (t.tag % 10 == 0) {
        use_helpers();  // jobs interleaved with the tasks
      }
    }
    ASSERT_TRUE(wait_for_runs(r, 100));
    for (int i = 0; i < 100; ++i) {
      ASSERT_EQ(r.order[static_cast<size_t>(i)], i);
    }
  });
  owner.join();
}

TEST_F(HelperTasks, InlineWithoutAHelper) {
  std::thread owner([] {  // a fresh thread: no parallel_for yet, so no helper
    Record r;
    Tagged t{&r, 7};
    run_on_helper({record_run, &t});
    EXPECT_EQ(r.runs.load(), 1) << "not run at once";
    EXPECT_EQ(r.thread.load(), std::this_thread::get_id());
  });
  owner.join();
}

TEST_F(HelperTasks, QueuedTasksRunBeforeTheOwnerIsGone) {
  Record r;
  std::vector<Tagged> tags;
  tags.reserve(50);
  for (int i = 0; i < 50; ++i) {
    tags.push_back({&r, i});
  }
  std::thread owner([&] {
    use_helpers();
    for (Tagged& t : tags) {
      run_on_helper({record_run, &t});
    }
  });  // exits at once: its helper is destroyed with tasks possibly still queued
  owner.join();
  EXPECT_EQ(r.runs.load(), 50);
}

}  // namespace
}  // namespace tessera::ops
