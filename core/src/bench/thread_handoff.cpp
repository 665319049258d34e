#include "bench/thread_handoff.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace tessera::bench {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  if (v.empty()) {
    return -1.0;
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A flag the two threads take turns on: even values are the caller's turn, odd the other's.
// Whoever waits past the deadline (a busy machine may not run both threads at once) marks the
// measurement abandoned, and both stop.
struct Turns {
  alignas(64) std::atomic<int64_t> flag{0};
  alignas(64) std::atomic<bool> abandoned{false};
  Clock::time_point deadline;

  bool await(int64_t value) {
    for (unsigned spins = 1; flag.load(std::memory_order_acquire) != value; ++spins) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if (spins % 1024 == 0 &&
          (abandoned.load(std::memory_order_relaxed) || Clock::now() > deadline)) {
        abandoned.store(true, std::memory_order_relaxed);
        return false;
      }
    }
    return true;
  }
};

}  // namespace

ThreadHandoff measure_thread_handoff() {
  constexpr int kBatches = 7;
  constexpr int64_t kTripsPerBatch = 2000;
  constexpr int64_t kTrips = kBatches * kTripsPerBatch, kHandoffs = kBatches;
  constexpr size_t kFloats = (size_t{1} << 20) / sizeof(float);
  constexpr size_t kFloatsPerLine = 64 / sizeof(float);
  Turns turns;
  turns.deadline = Clock::now() + std::chrono::milliseconds(200);
  std::vector<float> buffer(kFloats, 0.0f);
  std::atomic<float> sink{0.0f};  // keeps the reads

  // The other thread answers every ping, then reads the buffer after each of the caller's writes.
  std::thread other([&] {
    for (int64_t i = 0; i < kTrips; ++i) {
      if (!turns.await(2 * i + 1)) {
        return;
      }
      turns.flag.store(2 * i + 2, std::memory_order_release);
    }
    for (int64_t h = 0; h < kHandoffs; ++h) {
      if (!turns.await(2 * (kTrips + h) + 1)) {
        return;
      }
      float sum = 0.0f;
      for (size_t i = 0; i < kFloats; i += kFloatsPerLine) {
        sum += buffer[i];
      }
      sink.store(sum, std::memory_order_relaxed);
      turns.flag.store(2 * (kTrips + h) + 2, std::memory_order_release);
    }
  });

  std::vector<double> trip_ns, read_us;
  for (int b = 0; b < kBatches && !turns.abandoned.load(); ++b) {
    const auto start = Clock::now();
    bool done = true;
    for (int64_t i = b * kTripsPerBatch; i < (b + 1) * kTripsPerBatch && done; ++i) {
      turns.flag.store(2 * i + 1, std::memory_order_release);
      done = turns.await(2 * i + 2);
    }
    if (done) {
      trip_ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
                        static_cast<double>(kTripsPerBatch));
    }
  }
  for (int64_t h = 0; h < kHandoffs && !turns.abandoned.load(); ++h) {
    // One write per line: each line leaves the other thread's cache (it read them last time), as
    // a buffer reused step after step does.
    const auto start = Clock::now();
    for (size_t i = 0; i < kFloats; i += kFloatsPerLine) {
      buffer[i] = static_cast<float>(h);
    }
    turns.flag.store(2 * (kTrips + h) + 1, std::memory_order_release);
    if (turns.await(2 * (kTrips + h) + 2)) {
      read_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
  }
  other.join();
  return {median(trip_ns), median(read_us)};
}

}  // namespace tessera::bench
