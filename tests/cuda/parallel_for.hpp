// Runs f(i) for i in [0, n) on all cores: the tests' CPU references over many tokens.
#pragma once

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace tessera::cudatest {

template <class F>
void parallel_for(int n, F f) {
  const int threads =
      std::max(1, std::min<int>(n, static_cast<int>(std::thread::hardware_concurrency())));
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) f(i);
    });
  for (auto& th : pool) th.join();
}

}  // namespace tessera::cudatest
