// tessera::Communicator over NCCL for executor ranks on GPUs (docs/engine.md "Tensor
// parallelism"). Header-only: the NCCL calls are in libtessera_cuda.so (nccl_api.h), found with
// dlsym, so nothing here links CUDA or NCCL. Buffers are device pointers of the rank's device;
// each collective is enqueued on the rank's stream and waited for, which matches the
// Communicator contract (complete when the call returns).
//
// Usage: rank 0 makes an id with NcclCommunicator::unique_id(api) and hands it to every rank
// thread; each constructs its NcclCommunicator (blocking until all have joined).
#pragma once

#include <dlfcn.h>

#include <array>
#include <string>

#include "device/communicator.hpp"
#include "device/device_communicator.hpp"
#include "nccl_api.h"
#include "util/check.hpp"

namespace tessera::cuda {

class NcclCommunicator final : public Communicator {
 public:
  using UniqueId = std::array<uint8_t, TS_NCCL_UNIQUE_ID_BYTES>;

  // The table of an already loaded libtessera_cuda.so (DeviceModule::load keeps it loaded).
  static const ts_cuda_nccl_api& load_api(const std::string& module_path) {
    void* handle = dlopen(module_path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (handle == nullptr) handle = dlopen(module_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    TS_CHECK(handle != nullptr, "cannot load the CUDA module {}: {}", module_path, dlerror());
    auto entry = reinterpret_cast<ts_cuda_nccl_entry_fn>(dlsym(handle, TS_CUDA_NCCL_ENTRY_SYMBOL));
    const ts_cuda_nccl_api* api = entry != nullptr ? entry() : nullptr;
    TS_CHECK(api != nullptr && api->struct_size >= sizeof(ts_cuda_nccl_api) &&
                 api->version == TS_CUDA_NCCL_API_VERSION,
             "{} has no NCCL table of version {}", module_path, TS_CUDA_NCCL_API_VERSION);
    return *api;
  }

  static UniqueId unique_id(const ts_cuda_nccl_api& api) {
    UniqueId id{};
    check(api.unique_id(id.data()), "ncclGetUniqueId");
    return id;
  }

  NcclCommunicator(const ts_cuda_nccl_api& api, int32_t ordinal, int ranks, int rank,
                   const UniqueId& id, void* stream)
      : api_(api), ranks_(ranks), rank_(rank), stream_(stream) {
    check(api_.init_rank(ordinal, ranks, id.data(), rank, &comm_), "ncclCommInitRank");
  }
  ~NcclCommunicator() override { api_.destroy(comm_); }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return ranks_; }

  void all_reduce_sum(float* data, size_t count) override {
    check(api_.all_reduce_sum_f32(comm_, data, count, stream_), "all_reduce");
    wait();
  }
  void all_gather(const float* send, size_t count, float* recv) override {
    check(api_.all_gather_f32(comm_, send, count, recv, stream_), "all_gather");
    wait();
  }
  void broadcast(void* data, size_t bytes, int root) override {
    check(api_.broadcast(comm_, data, bytes, root, stream_), "broadcast");
    wait();
  }
  void barrier() override { check(api_.barrier(comm_, stream_), "barrier"); }
  void abort_group(const char*) override { api_.abort(comm_); }

 private:
  static void check(ts_status s, const char* what) {
    TS_CHECK(s.code == TS_OK, "nccl {}: {}", what, s.message != nullptr ? s.message : "?");
  }
  void wait() { check(api_.synchronize(comm_, stream_), "synchronize"); }

  const ts_cuda_nccl_api& api_;
  int ranks_;
  int rank_;
  void* stream_;
  ts_nccl_comm* comm_ = nullptr;
};

// The same NCCL group as a device::DeviceCommunicator: each collective enqueued on the stream it
// is given, with no host wait (the rank synchronises once per step). Joins the group like
// NcclCommunicator (blocking until every rank has).
class NcclStreamCommunicator final : public device::DeviceCommunicator {
 public:
  NcclStreamCommunicator(const ts_cuda_nccl_api& api, int32_t ordinal, int ranks, int rank,
                         const NcclCommunicator::UniqueId& id)
      : api_(api), ranks_(ranks), rank_(rank) {
    check(api_.init_rank(ordinal, ranks, id.data(), rank, &comm_), "ncclCommInitRank");
  }
  ~NcclStreamCommunicator() override { api_.destroy(comm_); }
  NcclStreamCommunicator(const NcclStreamCommunicator&) = delete;
  NcclStreamCommunicator& operator=(const NcclStreamCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return ranks_; }
  bool enqueued() const override { return true; }

  void all_reduce_sum(float* data, size_t count, const device::Stream& stream) override {
    check(api_.all_reduce_sum_f32(comm_, data, count, stream.handle()), "all_reduce");
  }
  void all_reduce_sum_bf16(uint16_t* data, size_t count, const device::Stream& stream) override {
    check(api_.all_reduce_sum_bf16(comm_, data, count, stream.handle()), "all_reduce (bf16)");
  }
  void all_gather(const float* send, size_t count, float* recv,
                  const device::Stream& stream) override {
    check(api_.all_gather_f32(comm_, send, count, recv, stream.handle()), "all_gather");
  }
  void abort_group(const char*) override { api_.abort(comm_); }

 private:
  static void check(ts_status s, const char* what) {
    TS_CHECK(s.code == TS_OK, "nccl {}: {}", what, s.message != nullptr ? s.message : "?");
  }

  const ts_cuda_nccl_api& api_;
  int ranks_;
  int rank_;
  ts_nccl_comm* comm_ = nullptr;
};

}  // namespace tessera::cuda
