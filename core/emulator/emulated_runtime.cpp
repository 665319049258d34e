// The CUDA runtime calls of cuda_runtime_emulation.hpp that need the emulator's state: the
// emulated device is an H200-like device (name "Tessera SIMT emulator", sm_90) whose memory is
// the host's, reported TESSERA_EMULATED_DEVICES times (default once).
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "cuda_runtime_emulation.hpp"
#include "emulated_streams.hpp"
#include "simt_emulator.hpp"

namespace {

std::mutex g_page_locked_mutex;
std::map<uintptr_t, size_t> g_page_locked;  // cudaHostAlloc's blocks: start -> bytes

std::mutex g_sync_error_mutex;
std::string g_sync_error;  // the text of the last failed synchronisation

cudaError_t sync_result(bool ok, const std::string& error) {
  if (ok) return cudaSuccess;
  std::lock_guard lock(g_sync_error_mutex);
  g_sync_error = error;
  return cudaErrorLaunchFailure;
}

}  // namespace

namespace tessera::emu {
int device_count() {
  const char* asked = std::getenv("TESSERA_EMULATED_DEVICES");
  const int n = asked != nullptr ? std::atoi(asked) : 1;
  return std::clamp(n, 1, 16);
}

bool is_page_locked(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(g_page_locked_mutex);
  auto it = g_page_locked.upper_bound(at);
  return it != g_page_locked.begin() && at < std::prev(it)->first + std::prev(it)->second;
}

const char* sync_error_text() {
  std::lock_guard lock(g_sync_error_mutex);
  return g_sync_error.c_str();
}
}  // namespace tessera::emu

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int ordinal) {
  if (cudaSetDevice(ordinal) != cudaSuccess) return cudaErrorInvalidValue;
  std::memset(prop, 0, sizeof *prop);
  std::strncpy(prop->name, "Tessera SIMT emulator", sizeof prop->name - 1);
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = tessera::emu::kEmulatedSmCount;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  *total_bytes = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * page;
  *free_bytes = static_cast<size_t>(sysconf(_SC_AVPHYS_PAGES)) * page;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  *version = 0;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = 0;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  try {
    *p = tessera::emu::device_alloc(bytes);
    return cudaSuccess;
  } catch (const std::bad_alloc&) {
    *p = nullptr;
    return cudaErrorMemoryAllocation;
  }
}

cudaError_t cudaFree(void* p) {
  if (p != nullptr && !tessera::emu::is_device_memory(p)) return cudaErrorInvalidValue;
  tessera::emu::device_synchronize();  // as cudaFree synchronises the device
  tessera::emu::device_free(p);
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned /*flags*/) {
  constexpr size_t kAlign = 4096;  // page-locked memory is whole pages
  *p = std::aligned_alloc(kAlign, (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign);
  if (*p == nullptr) return cudaErrorMemoryAllocation;
  std::lock_guard lock(g_page_locked_mutex);
  g_page_locked.emplace(reinterpret_cast<uintptr_t>(*p), std::max<size_t>(bytes, 1));
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* p) {
  if (p == nullptr) return cudaSuccess;
  {
    std::lock_guard lock(g_page_locked_mutex);
    if (g_page_locked.erase(reinterpret_cast<uintptr_t>(p)) == 0) return cudaErrorInvalidValue;
  }
  tessera::emu::device_synchronize();  // as cudaFreeHost waits for the copies that use it
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = tessera::emu::stream_create();
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  tessera::emu::stream_destroy(stream);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (tessera::emu::capturing(stream)) {
    tessera::emu::capture_invalidate(stream, "a synchronisation of the capturing stream");
    return cudaErrorStreamCaptureUnsupported;
  }
  std::string error;
  const bool ok = tessera::emu::stream_synchronize(stream, &error);
  return sync_result(ok, error);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) {
  *event = tessera::emu::event_create();
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  tessera::emu::event_destroy(event);
  return cudaSuccess;
}

// Events inside a capture (graph edges between streams) are not emulated: they invalidate it.
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (tessera::emu::capturing(stream)) {
    tessera::emu::capture_invalidate(stream, "an event recorded on the capturing stream");
    return cudaErrorStreamCaptureUnsupported;
  }
  tessera::emu::event_record(event, stream);
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  if (tessera::emu::capturing(stream)) {
    tessera::emu::capture_invalidate(stream, "a wait for an event on the capturing stream");
    return cudaErrorStreamCaptureUnsupported;
  }
  tessera::emu::stream_wait_event(stream, event);
  return cudaSuccess;
}

namespace {
std::mutex g_capture_error_mutex;
std::string g_capture_error;
}  // namespace

const char* tessera::emu::capture_error_text() {
  std::lock_guard lock(g_capture_error_mutex);
  return g_capture_error.c_str();
}

struct CUgraph_emulated {
  std::shared_ptr<tessera::emu::CapturedWork> work;
};
struct CUgraphExec_emulated {
  std::shared_ptr<const tessera::emu::CapturedWork> work;
};

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  if (stream == nullptr) return cudaErrorStreamCaptureUnsupported;
  return tessera::emu::capture_begin(stream) ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  *graph = nullptr;
  std::string why;
  std::shared_ptr<tessera::emu::CapturedWork> work = tessera::emu::capture_end(stream, &why);
  if (work == nullptr) {
    std::lock_guard lock(g_capture_error_mutex);
    g_capture_error = "operation failed due to a previous error during capture: " + why;
    return cudaErrorStreamCaptureInvalidated;
  }
  *graph = new CUgraph_emulated{std::move(work)};
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (graph == nullptr) return cudaErrorInvalidValue;
  *exec = new CUgraphExec_emulated{graph->work};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (exec == nullptr) return cudaErrorInvalidValue;
  for (const std::function<void()>& work : *exec->work) tessera::emu::enqueue(stream, work);
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  std::string error;
  if (!tessera::emu::event_synchronize(start, &error) ||
      !tessera::emu::event_synchronize(end, &error))
    return sync_result(false, error);
  *ms = static_cast<float>(tessera::emu::event_seconds(start, end) * 1e3);
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  std::string error;
  const bool ok = tessera::emu::event_synchronize(event, &error);
  return sync_result(ok, error);
}
