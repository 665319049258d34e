#include "bench/copy_bandwidth.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace tessera::bench {

double measure_copy_bandwidth(int threads, uint64_t bytes_per_array, int repeats) {
  const size_t n = bytes_per_array / sizeof(double);
  std::vector<double> a(n, 1.0), c(n, 0.0);  // touched here, so page faults are not timed
  threads = std::max(1, threads);
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      const size_t lo = n * t / threads, hi = n * (t + 1) / threads;
      pool.emplace_back(
          [&, lo, hi] { std::memcpy(c.data() + lo, a.data() + lo, (hi - lo) * sizeof(double)); });
    }
    for (auto& th : pool) th.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 2.0 * static_cast<double>(n * sizeof(double)) / seconds / 1e9);
  }
  volatile double sink = c[n / 2];  // keep the copy observable
  (void)sink;
  return best;
}

}  // namespace tessera::bench
