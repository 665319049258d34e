#include "emulated_streams.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <vector>

#include "simt_emulator.hpp"

struct CUstream_emulated {
  std::recursive_mutex mutex;  // held while work runs: a stream runs one item at a time
  std::deque<std::function<void()>> queue;
  uint64_t enqueued = 0, executed = 0;  // counts of items
  std::string error;                    // the first failure since the last synchronisation
  std::shared_ptr<tessera::emu::CapturedWork> capture;  // set while capturing
  std::string capture_error;                            // what invalidated the capture
};

struct CUevent_emulated {
  std::mutex mutex;
  cudaStream_t stream = nullptr;  // where it was last recorded (null: complete)
  uint64_t mark = 0;              // complete once stream->executed >= mark
  // When the stream ran up to the last record (steady clock, ns); a fresh one per record, so a
  // record still queued after the event is destroyed or recorded again writes to its own.
  std::shared_ptr<std::atomic<int64_t>> stamp = std::make_shared<std::atomic<int64_t>>(0);
};

namespace tessera::emu {
namespace {

// Runs `stream`'s items until `mark` of them have run (all of them when mark is UINT64_MAX).
void run_until(cudaStream_t stream, uint64_t mark) {
  std::lock_guard lock(stream->mutex);
  while (stream->executed < mark && !stream->queue.empty()) {
    std::function<void()> work = std::move(stream->queue.front());
    stream->queue.pop_front();
    try {
      work();
      if (const cudaError_t e = take_last_error(); e != cudaSuccess && stream->error.empty())
        stream->error = last_error_text();
    } catch (const std::exception& e) {
      if (stream->error.empty()) stream->error = e.what();
    }
    ++stream->executed;
  }
}

// Every live stream, for device_synchronize(), which holds the mutex while it runs them so that
// no other thread destroys one under it (recursive: work it runs may free device memory, which
// synchronises the device again on the same thread).
std::recursive_mutex g_streams_mutex;
std::set<cudaStream_t> g_streams;

}  // namespace

cudaStream_t stream_create() {
  auto* stream = new CUstream_emulated;
  std::lock_guard lock(g_streams_mutex);
  g_streams.insert(stream);
  return stream;
}

void stream_destroy(cudaStream_t stream) {
  if (stream == nullptr) return;
  {
    std::lock_guard lock(g_streams_mutex);
    g_streams.erase(stream);
  }
  run_until(stream, UINT64_MAX);
  delete stream;
}

void device_synchronize() {
  std::lock_guard lock(g_streams_mutex);
  const std::vector<cudaStream_t> streams(g_streams.begin(), g_streams.end());
  for (cudaStream_t stream : streams) run_until(stream, UINT64_MAX);
}

bool stream_synchronize(cudaStream_t stream, std::string* error) {
  if (stream == nullptr) return true;
  run_until(stream, UINT64_MAX);
  std::lock_guard lock(stream->mutex);
  if (stream->error.empty()) return true;
  if (error != nullptr) *error = stream->error;
  stream->error.clear();
  return false;
}

void enqueue(cudaStream_t stream, std::function<void()> work) {
  if (stream == nullptr) {
    work();
    return;
  }
  std::lock_guard lock(stream->mutex);
  if (stream->capture != nullptr) {
    stream->capture->push_back(std::move(work));
    return;
  }
  stream->queue.push_back(std::move(work));
  ++stream->enqueued;
}

bool capturing(cudaStream_t stream) {
  if (stream == nullptr) return false;
  std::lock_guard lock(stream->mutex);
  return stream->capture != nullptr;
}

bool capture_begin(cudaStream_t stream) {
  std::lock_guard lock(stream->mutex);
  if (stream->capture != nullptr) return false;
  stream->capture = std::make_shared<CapturedWork>();
  stream->capture_error.clear();
  return true;
}

void capture_invalidate(cudaStream_t stream, const std::string& why) {
  std::lock_guard lock(stream->mutex);
  if (stream->capture != nullptr && stream->capture_error.empty()) stream->capture_error = why;
}

std::shared_ptr<CapturedWork> capture_end(cudaStream_t stream, std::string* why) {
  std::lock_guard lock(stream->mutex);
  std::shared_ptr<CapturedWork> work = std::move(stream->capture);
  stream->capture = nullptr;
  if (work == nullptr) {
    *why = "the stream was not capturing";
    return nullptr;
  }
  if (!stream->capture_error.empty()) {
    *why = std::move(stream->capture_error);
    stream->capture_error.clear();
    return nullptr;
  }
  return work;
}

void launch_on(cudaStream_t stream, dim3 grid, dim3 block, size_t dynamic_smem_bytes,
               std::function<void()> body) {
  enqueue(stream, [=, body = std::move(body)] { launch(grid, block, dynamic_smem_bytes, body); });
}

cudaEvent_t event_create() { return new CUevent_emulated; }

void event_destroy(cudaEvent_t event) { delete event; }

void event_record(cudaEvent_t event, cudaStream_t stream) {
  std::lock_guard lock(event->mutex);
  event->stream = stream;
  auto stamp = std::make_shared<std::atomic<int64_t>>(0);
  event->stamp = stamp;
  auto now = [stamp] {
    stamp->store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now().time_since_epoch())
                     .count());
  };
  if (stream == nullptr) {
    now();
    return;
  }
  std::lock_guard stream_lock(stream->mutex);
  enqueue(stream, now);
  event->mark = stream->enqueued;
}

double event_seconds(cudaEvent_t start, cudaEvent_t end) {
  int64_t a = 0, b = 0;
  {
    std::lock_guard lock(start->mutex);
    a = start->stamp->load();
  }
  {
    std::lock_guard lock(end->mutex);
    b = end->stamp->load();
  }
  return static_cast<double>(b - a) * 1e-9;
}

void stream_wait_event(cudaStream_t stream, cudaEvent_t event) {
  cudaStream_t source;
  uint64_t mark;
  {
    std::lock_guard lock(event->mutex);
    source = event->stream;
    mark = event->mark;
  }
  if (source == nullptr || source == stream) return;
  enqueue(stream, [source, mark] { run_until(source, mark); });
}

bool event_synchronize(cudaEvent_t event, std::string* error) {
  cudaStream_t source;
  uint64_t mark;
  {
    std::lock_guard lock(event->mutex);
    source = event->stream;
    mark = event->mark;
  }
  if (source == nullptr) return true;
  run_until(source, mark);
  std::lock_guard lock(source->mutex);
  if (source->error.empty()) return true;
  if (error != nullptr) *error = source->error;
  return false;
}

}  // namespace tessera::emu
