// ops::run_on_helper: a task handed to the calling thread's parallel_for helper runs there, between
// jobs, in order, and a job posted meanwhile goes before the tasks still queued; inline where there
// is no helper or it sleeps; and before the owner's exit completes.
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

void spin_for(std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Ten 5 ms tasks are queued, then a job of two 20 ms items is posted: the helper must take an item
// after the task it is running (the engine's output stage renders in such tasks while the forward
// posts its GEMMs), not after all ten, when the owner would have run both items itself. (Retried
// with a new owner: on a busy machine the helper may lose its core.)
TEST_F(HelperTasks, AJobGoesBeforeTheTasksStillQueued) {
  bool helper_took_an_item = false;
  for (int attempt = 0; attempt < 10 && !helper_took_an_item; ++attempt) {
    std::thread owner([&] {
      use_helpers();
      std::vector<Tagged> tags;
      Record r;
      tags.reserve(10);
      for (int i = 0; i < 10; ++i) {
        tags.push_back({&r, i});
      }
      const auto slow = [](void* ctx) {
        spin_for(std::chrono::milliseconds(5));
        record_run(ctx);
      };
      for (Tagged& t : tags) {
        run_on_helper({slow, &t});
      }
      std::atomic<std::thread::id> item_threads[2];
      parallel_for(2, 2, [&](int64_t i) {
        spin_for(std::chrono::milliseconds(20));
        item_threads[i].store(std::this_thread::get_id());
      });
      helper_took_an_item = item_threads[0].load() != item_threads[1].load();
      ASSERT_TRUE(wait_for_runs(r, 10)) << "the tasks never all ran";
      for (int i = 0; i < 10; ++i) {
        ASSERT_EQ(r.order[static_cast<size_t>(i)], i);
      }
    });
    owner.join();
  }
  EXPECT_TRUE(helper_took_an_item) << "the helper ran its queued tasks before the job, 10 times";
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
