// The device layer (docs/cuda.md, "The device layer"): who owns device memory, streams and
// events, and the ops every backend implements. A Device is the CPU (host memory, work runs at
// once), a GPU through the CUDA device module, or the SIMT emulator through the same module's
// emulated build. Everything the forward allocates for a device goes through here.
//
// Ownership and threads: a Device outlives every buffer, stream and event made from it. Buffers,
// streams and events are move-only RAII handles. One rank's thread uses its device's stream;
// Device's own functions are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace tessera::device {

class DeviceOps;

enum class DeviceKind { kCpu, kCuda };
enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };

class Device;

// Device memory (host memory on the CPU device), released by its device.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device* owner, void* data, size_t bytes)
      : owner_(owner), data_(data), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    DeviceBuffer(std::move(o)).swap(*this);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  [[nodiscard]] void* data() const { return data_; }
  template <class T>
  [[nodiscard]] T* as() const {
    return static_cast<T*>(data_);
  }
  [[nodiscard]] size_t bytes() const { return bytes_; }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(owner_, o.owner_);
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
  }
  Device* owner_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Host memory for copies to and from a device: page-locked on a CUDA device (the copies then run
// without the runtime staging them), the heap on the CPU. It is tied to no Device object and may
// outlive it; `release` frees it (the CUDA module stays loaded for the life of the process).
struct HostRelease {
  void (*release)(const void* context, void* memory) noexcept = nullptr;
  const void* context = nullptr;  // e.g. the module's table
  void operator()(std::byte* memory) const noexcept {
    if (release != nullptr) {
      release(context, memory);
    }
  }
};
using HostBuffer = std::unique_ptr<std::byte[], HostRelease>;

// An in-order queue of device work (a CUDA stream; on the CPU device work runs at once).
class Stream {
 public:
  Stream() = default;
  Stream(Device* owner, void* handle) : owner_(owner), handle_(handle) {}
  Stream(Stream&& o) noexcept { swap(o); }
  Stream& operator=(Stream&& o) noexcept {
    Stream(std::move(o)).swap(*this);
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  [[nodiscard]] void* handle() const { return handle_; }  // cudaStream_t, or null on the CPU

 private:
  void swap(Stream& o) noexcept {
    std::swap(owner_, o.owner_);
    std::swap(handle_, o.handle_);
  }
  Device* owner_ = nullptr;
  void* handle_ = nullptr;
};

// A mark in a stream that other streams (or the host) can wait for.
class Event {
 public:
  Event() = default;
  Event(Device* owner, void* handle) : owner_(owner), handle_(handle) {}
  Event(Event&& o) noexcept { swap(o); }
  Event& operator=(Event&& o) noexcept {
    Event(std::move(o)).swap(*this);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  [[nodiscard]] void* handle() const { return handle_; }

 private:
  void swap(Event& o) noexcept {
    std::swap(owner_, o.owner_);
    std::swap(handle_, o.handle_);
  }
  Device* owner_ = nullptr;
  void* handle_ = nullptr;
};

// Work captured from a stream (a CUDA graph), replayed by Device::launch: every kernel with the
// arguments it was captured with, every copy between the same addresses.
class Graph {
 public:
  Graph() = default;
  Graph(Device* owner, void* handle) : owner_(owner), handle_(handle) {}
  Graph(Graph&& o) noexcept { swap(o); }
  Graph& operator=(Graph&& o) noexcept {
    Graph(std::move(o)).swap(*this);
    return *this;
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  [[nodiscard]] void* handle() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  void swap(Graph& o) noexcept {
    std::swap(owner_, o.owner_);
    std::swap(handle_, o.handle_);
  }
  Device* owner_ = nullptr;
  void* handle_ = nullptr;
};

class Device {
 public:
  virtual ~Device() = default;

  [[nodiscard]] virtual DeviceKind kind() const = 0;
  // "cpu", "cuda:0 NVIDIA H200 (sm_90, 139.8 GiB, 132 SMs)", "cuda:0 Tessera SIMT emulator ..."
  [[nodiscard]] virtual std::string describe() const = 0;
  [[nodiscard]] virtual bool emulated() const { return false; }
  [[nodiscard]] virtual int32_t ordinal() const { return 0; }  // the CUDA device's number
  // Devices of this kind the process can use: the CUDA module's count (1 on the CPU).
  [[nodiscard]] virtual int32_t device_count() const { return 1; }
  [[nodiscard]] virtual uint64_t free_bytes() const = 0;

  // Throws std::runtime_error naming the device and the size when it cannot.
  [[nodiscard]] virtual DeviceBuffer allocate(size_t bytes) = 0;
  // Host memory the device copies to and from best (HostBuffer); 256-byte aligned at least.
  [[nodiscard]] virtual HostBuffer allocate_host(size_t bytes) = 0;
  // Whether `p` is in memory from allocate_host that is page-locked (never on the CPU device).
  [[nodiscard]] virtual bool page_locked(const void* p) const = 0;
  [[nodiscard]] virtual Stream create_stream() = 0;
  [[nodiscard]] virtual Event create_event() = 0;
  // An event that also notes when the stream reaches it (benchmarks: device::StepTimeline).
  [[nodiscard]] virtual Event create_timing_event() = 0;

  // Ordered on `stream`. A host-to-device copy reads the host bytes before it returns; a
  // device-to-host copy has written them only once the stream is synchronised.
  virtual void copy(void* dst, const void* src, size_t bytes, CopyKind kind,
                    const Stream& stream) = 0;
  virtual void fill(void* dst, int byte, size_t bytes, const Stream& stream) = 0;
  // Waits for the stream's work; throws with the device's message when some of it failed.
  virtual void synchronize(const Stream& stream) = 0;
  virtual void record(const Event& event, const Stream& stream) = 0;
  virtual void wait(const Stream& stream, const Event& event) = 0;  // no host wait
  // Milliseconds between two recorded timing events; waits for both.
  [[nodiscard]] virtual double elapsed_ms(const Event& start, const Event& end) = 0;

  // Whether capture() can record work (CUDA devices; the CPU device runs work at once).
  [[nodiscard]] virtual bool graphs() const { return false; }
  // Runs `record`, whose work on `stream` is recorded instead of run, and returns it as a graph.
  // Inside, nothing may synchronise the stream, use events on it or copy to the device from
  // pageable host memory (stage uploads in allocate_host's memory: a replay reads them again).
  // Throws naming what broke the capture (the stream is then usable again), or when graphs() is
  // false; an exception from `record` ends the capture and propagates.
  [[nodiscard]] virtual Graph capture(const Stream& stream, const std::function<void()>& record);
  // Enqueues the graph's work on `stream`.
  virtual void launch(const Graph& graph, const Stream& stream);

  [[nodiscard]] virtual const DeviceOps& ops() const = 0;

 protected:
  friend class DeviceBuffer;
  friend class Stream;
  friend class Event;
  friend class Graph;
  virtual void destroy_graph(void* /*handle*/) noexcept {}
  virtual void release(void* data) noexcept = 0;
  virtual void destroy_stream(void* handle) noexcept = 0;
  virtual void destroy_event(void* handle) noexcept = 0;
};

inline DeviceBuffer::~DeviceBuffer() {
  if (owner_ != nullptr && data_ != nullptr) {
    owner_->release(data_);
  }
}
inline Stream::~Stream() {
  if (owner_ != nullptr) {
    owner_->destroy_stream(handle_);
  }
}
inline Event::~Event() {
  if (owner_ != nullptr) {
    owner_->destroy_event(handle_);
  }
}
inline Graph::~Graph() {
  if (owner_ != nullptr && handle_ != nullptr) {
    owner_->destroy_graph(handle_);
  }
}

}  // namespace tessera::device
