// Streams and events of the emulated device: in-order queues of work (copies, kernel launches)
// that run only when something waits for them, on the waiting thread. A host read of a
// device-to-host copy that was never synchronised sees the old bytes, as a missing
// cudaStreamSynchronize would on a GPU read not-yet-written memory: the tests catch it.
//
// Semantics (those of the CUDA runtime that the engine relies on):
//   - work on one stream runs in the order it was enqueued;
//   - stream_synchronize(s) runs everything enqueued on s so far (and whatever s waits on);
//   - event_record(e, s) marks s's current end (and notes the time s runs up to it);
//   stream_wait_event(t, e) makes t's later work
//     start after that mark (running s up to it first); event_synchronize(e) runs s up to it;
//   - the null stream runs its work at once, on the calling thread;
//   - device_synchronize() runs every live stream's queued work; freeing device memory does it
//     first (cudaFree synchronises the device), so queued work never touches freed memory;
//   - a host-to-device copy from pageable memory reads the source when enqueued (the runtime
//     stages it before returning), so the caller may reuse its buffer at once;
//   - a capturing stream records its work instead (CUDA graphs); synchronising it, recording or
//     waiting for an event on it, or a pageable host-to-device copy onto it invalidates the
//     capture, which capture_end then reports.
// Thread safety: every function may be called from any thread; a stream's work runs under the
// stream's own lock, one item at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cuda_runtime_emulation.hpp"

namespace tessera::emu {

cudaStream_t stream_create();
void stream_destroy(cudaStream_t stream);  // runs what is still queued first
// Runs the queued work; false with the first failure's text (the stream is then empty).
bool stream_synchronize(cudaStream_t stream, std::string* error = nullptr);
void enqueue(cudaStream_t stream, std::function<void()> work);
// Runs the queued work of every live stream (failures stay recorded on their streams).
void device_synchronize();

// Stream capture (CUDA graphs): while a stream captures, work enqueued on it is recorded instead
// of queued. capture_end hands the recorded work over, or null with the reason when something
// invalidated the capture (capture_invalidate: a synchronisation, an event, a pageable copy).
bool capturing(cudaStream_t stream);
bool capture_begin(cudaStream_t stream);  // false when it already captures
void capture_invalidate(cudaStream_t stream, const std::string& why);
using CapturedWork = std::vector<std::function<void()>>;
std::shared_ptr<CapturedWork> capture_end(cudaStream_t stream, std::string* why);

cudaEvent_t event_create();
void event_destroy(cudaEvent_t event);
void event_record(cudaEvent_t event, cudaStream_t stream);
void stream_wait_event(cudaStream_t stream, cudaEvent_t event);
bool event_synchronize(cudaEvent_t event, std::string* error = nullptr);
// Seconds between the times the stream ran up to `start`'s and `end`'s records (both complete:
// synchronise them first).
double event_seconds(cudaEvent_t start, cudaEvent_t end);

}  // namespace tessera::emu
