// The in-process communicator: collectives across rank threads, a fixed reduction order (the
// pairwise tree of ops/tree_sum.hpp over ranks) giving bit-identical results on every rank and
// run, and abort waking every rank.
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
  // Every fifth: 1, 1e8, -1e8, 1 on ranks 0-3, where ((1 + 1e8) - 1e8) + 1 = 1 but the tree gives
  // (1 + 1e8) + (-1e8 + 1) = 0.
  constexpr float kCancel[] = {1.0f, 1e8f, -1e8f, 1.0f};
  for (size_t i = 0; i < n; i += 5) v[i] = kCancel[rank % 4];
  return v;
}

// The tree written out per size: 1: v0; 2: v0 + v1; 3: (v0 + v1) + v2; 4: (v0 + v1) + (v2 + v3).
float tree_of(const std::vector<std::vector<float>>& v, size_t i) {
  switch (v.size()) {
    case 1:
      return v[0][i];
    case 2:
      return v[0][i] + v[1][i];
    case 3:
      return (v[0][i] + v[1][i]) + v[2][i];
    default:
      return (v[0][i] + v[1][i]) + (v[2][i] + v[3][i]);
  }
}

TEST(HostCommunicator, AllReduceIsThePairwiseTreeOnEveryRank) {
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
    std::vector<std::vector<float>> inputs;
    for (int r = 0; r < size; ++r) inputs.push_back(rank_values(r, n));
    std::vector<float> expected(n), rank_order(n);
    size_t differs = 0;
    for (size_t i = 0; i < n; ++i) {
      expected[i] = tree_of(inputs, i);
      rank_order[i] = inputs[0][i];
      for (int r = 1; r < size; ++r) rank_order[i] += inputs[static_cast<size_t>(r)][i];
      differs += expected[i] != rank_order[i] ? 1 : 0;
    }
    for (int r = 0; r < size; ++r)
      EXPECT_EQ(results[static_cast<size_t>(r)], expected) << "rank " << r << " of " << size;
    if (size == 4) {  // the values make the order visible: a rank-order sum would fail above
      EXPECT_GT(differs, 0u);
    }
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
