// The CUDA-device half of a kv-cache plugin (docs/kvcache.md, "On a CUDA device"), shared by the
// in-tree formats: its CUDA module (cuda_sibling.hpp) opened for the build the host asks for,
// the device checked, and store / load with the pointers checked to be device memory. Api is the
// module's C table, which has the shape of ts_bf16_cuda_api and ts_fp8_cuda_api (check_device,
// is_device_memory, copy_to_host, store, load taking a Records description of the pages).
//
// store() first copies the rows to the host and waits for the stream, so that non-finite input
// is refused by the plugin's own `refuse(host_rows)` (the CPU path's status and message) before
// anything is written; then it enqueues the writes on device.stream and returns. store_async()
// (ABI 1.4) only enqueues: the kernels leave a non-finite row unwritten and report its index in
// the host's device word. load() only enqueues.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cuda_sibling.hpp"
#include "tessera/finite_values.hpp"
#include "tessera/plugin_sdk.hpp"

namespace tessera::sdk {

template <class Api, class Records>
class KvCudaPath {
 public:
  // format: the plugin's name in messages ("bf16"); base: its library base name
  // ("tessera_kvcache_bf16"); anchor: an address inside the plugin.
  KvCudaPath(std::string format, const std::string& base, const char* entry_symbol,
             const ts_host_api* host, const void* anchor)
      : format_(std::move(format)),
        build_(cuda_build_of(host)),
        anchor_(anchor),
        module_(std::make_unique<CudaSibling<Api>>(base, entry_symbol)) {}

  // The module and a check of device `ordinal`, or a refusal naming what is missing.
  ts_status open(int32_t ordinal, const Api** api) {
    std::string why;
    *api = module_->get(anchor_, build_, why);
    if (*api == nullptr) {
      return fail(TS_ERR_UNSUPPORTED, format_ + " cache on CUDA: " + why);
    }
    if (const char* e = (*api)->check_device(ordinal); e != nullptr) {
      return fail(TS_ERR_UNSUPPORTED, format_ + " cache: " + e);
    }
    return ok();
  }

  // rows [n, dim] (device) -> slots; refuse(host_rows) answers a non-finite value.
  template <class Refuse>
  ts_status store(const Records& records, const float* rows, int64_t n, int64_t dim,
                  const int64_t* slots, uint8_t* pool, ts_device device, Refuse refuse) {
    if (n == 0) {
      return ok();
    }
    const Api* api = nullptr;
    if (ts_status s = prepare(device, rows, pool, &api); s.code != TS_OK) {
      return s;
    }
    std::vector<float> host(static_cast<size_t>(n * dim));
    if (const char* e = api->copy_to_host(device.ordinal, device.stream, host.data(), rows,
                                          host.size() * sizeof(float));
        e != nullptr) {
      return fail(TS_ERR_INTERNAL, format_ + " store: " + e);
    }
    if (!all_finite(host.data(), n * dim)) {
      return refuse(host.data());
    }
    if (const char* e =
            api->store(device.ordinal, device.stream, &records, rows, n, slots, pool, nullptr);
        e != nullptr) {
      return fail(TS_ERR_INTERNAL, format_ + " store: " + e);
    }
    return ok();
  }

  // rows [n, dim] (device) -> slots, enqueued without a wait; a non-finite row is not written
  // and its index min-reduced into *first_bad_row (device memory).
  ts_status store_async(const Records& records, const float* rows, int64_t n, const int64_t* slots,
                        uint8_t* pool, ts_device device, int64_t* first_bad_row) {
    if (n == 0) {
      return ok();
    }
    const Api* api = nullptr;
    if (ts_status s = prepare(device, rows, pool, &api); s.code != TS_OK) {
      return s;
    }
    if (!api->is_device_memory(first_bad_row)) {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "first_bad_row is host memory; a CUDA device needs device memory");
    }
    if (const char* e = api->store(device.ordinal, device.stream, &records, rows, n, slots, pool,
                                   first_bad_row);
        e != nullptr) {
      return fail(TS_ERR_INTERNAL, format_ + " store: " + e);
    }
    return ok();
  }

  // store_async with slots [n] in device memory, a negative slot a padding row (ABI 1.6):
  // nothing read on the host, capturable in a CUDA graph.
  ts_status store_device_slots(const Records& records, const float* rows, int64_t n,
                               const int64_t* slots, uint8_t* pool, ts_device device,
                               int64_t* first_bad_row) {
    if (n == 0) {
      return ok();
    }
    const Api* api = nullptr;
    if (ts_status s = prepare(device, rows, pool, &api); s.code != TS_OK) {
      return s;
    }
    if (api->struct_size < offsetof(Api, store_device_slots) + sizeof(void*) ||
        api->store_device_slots == nullptr) {
      return fail(TS_ERR_UNSUPPORTED, format_ +
                                          " cache: its CUDA module is older than the plugin (no "
                                          "store_device_slots): install the two from one build");
    }
    if (!api->is_device_memory(slots)) {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "slots is host memory; store_device_slots needs them "
                  "in device memory");
    }
    if (first_bad_row == nullptr || !api->is_device_memory(first_bad_row)) {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "first_bad_row is null or host memory; a CUDA device needs device memory");
    }
    if (const char* e = api->store_device_slots(device.ordinal, device.stream, &records, rows, n,
                                                slots, pool, first_bad_row);
        e != nullptr) {
      return fail(TS_ERR_INTERNAL, format_ + " store: " + e);
    }
    return ok();
  }

  // slots -> rows [n, dim] (device), enqueued.
  ts_status load(const Records& records, const uint8_t* pool, const int64_t* slots, int64_t n,
                 float* rows, ts_device device) {
    if (n == 0) {
      return ok();
    }
    const Api* api = nullptr;
    if (ts_status s = prepare(device, rows, pool, &api); s.code != TS_OK) {
      return s;
    }
    if (const char* e = api->load(device.ordinal, device.stream, &records, pool, slots, n, rows);
        e != nullptr) {
      return fail(TS_ERR_INTERNAL, format_ + " load: " + e);
    }
    return ok();
  }

 private:
  ts_status prepare(ts_device device, const void* rows, const void* pool, const Api** api) {
    if (ts_status s = open(device.ordinal, api); s.code != TS_OK) {
      return s;
    }
    if (!(*api)->is_device_memory(rows)) {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "rows is host memory; a CUDA device needs device memory");
    }
    if (!(*api)->is_device_memory(pool)) {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "pool is host memory; a CUDA device needs device memory");
    }
    return ok();
  }

  std::string format_;
  int32_t build_;
  const void* anchor_;
  std::unique_ptr<CudaSibling<Api>> module_;  // opened on the first CUDA call, kept
};

}  // namespace tessera::sdk
