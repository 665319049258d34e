// The in-process communicator: collectives across rank threads, a fixed reduction order (rank 0,
// then 1, ...) giving bit-identical results on every rank and run, and abort waking every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "executor/host_communicator.hpp"
#include "util/check.hpp"

namespace tessera {
namespace {

template <class Fn>
void on_ranks(HostCommGroup& group, Fn fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < group.size(); ++r)
    threads.emplace_back([&, r] { fn(group.communicator(r)); });
  for (auto& t : threads) t.join();
}

std::vector<float> rank_values(int rank, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)  // magnitudes that make the summation order visible
    v[i] = static_cast<float>(std::pow(10.0, (rank * 7 + static_cast<int>(i)) % 9 - 4)) *
           (i % 2 ? 1.0f : -1.0f) * (1.0f + 0.1f * static_cast<float>(rank));
  return v;
}

TEST(HostCommunicator, AllReduceIsTheRankOrderSumOnEveryRank) {
  for (int size : {1, 2, 3, 4}) {
    HostCommGroup group(size);
    const size_t n = 1000;
    std::vector<std::vector<float>> results(static_cast<size_t>(size));
    on_ranks(group, [&](Communicator& c) {
      auto v = rank_values(c.rank(), n);
      for (int repeat = 0; repeat < 3; ++repeat) {  // reuse across calls
        auto w = v;
        c.all_reduce_sum(w.data(), w.size());
        if (repeat == 2) results[static_cast<size_t>(c.rank())] = w;
      }
    });
    std::vector<float> expected = rank_values(0, n);
    for (int r = 1; r < size; ++r) {
      const auto v = rank_values(r, n);
      for (size_t i = 0; i < n; ++i) expected[i] += v[i];
    }
    for (int r = 0; r < size; ++r)
      EXPECT_EQ(results[static_cast<size_t>(r)], expected) << "rank " << r << " of " << size;
  }
}

TEST(HostCommunicator, AllGatherAndBroadcast) {
  HostCommGroup group(3);
  std::vector<std::vector<float>> gathered(3);
  std::vector<std::string> received(3);
  on_ranks(group, [&](Communicator& c) {
    const std::vector<float> mine{float(c.rank()), float(c.rank()) + 0.5f};
    std::vector<float> all(6);
    c.all_gather(mine.data(), mine.size(), all.data());
    gathered[static_cast<size_t>(c.rank())] = all;
    std::string text = c.rank() == 1 ? "plan from rank 1" : std::string(16, '?');
    c.broadcast(text.data(), text.size(), 1);
    received[static_cast<size_t>(c.rank())] = text;
    c.barrier();
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(gathered[static_cast<size_t>(r)], (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}));
    EXPECT_EQ(received[static_cast<size_t>(r)], "plan from rank 1");
  }
}

TEST(HostCommunicator, AbortWakesEveryRank) {
  HostCommGroup group(3);
  std::atomic<int> threw{0};
  on_ranks(group, [&](Communicator& c) {
    try {
      if (c.rank() == 2) {
        c.abort_group("rank 2 failed on purpose");
        return;
      }
      float x = 1;
      c.all_reduce_sum(&x, 1);  // would wait for rank 2 forever
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("rank 2 failed on purpose"), std::string::npos);
      ++threw;
    }
  });
  EXPECT_EQ(threw.load(), 2);
  EXPECT_THROW(group.communicator(0).barrier(), Error);
}

}  // namespace
}  // namespace tessera
