// NCCL collectives of libtessera_cuda.so behind the C table of nccl_api.h. Built with NCCL when
// CMake finds it (TESSERA_HAVE_NCCL); otherwise every call answers TS_ERR_UNSUPPORTED.
#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "nccl_api.h"
#include "tessera/plugin_sdk.hpp"

#if TESSERA_HAVE_NCCL
#include <nccl.h>
#endif

struct ts_nccl_comm {
  int32_t ordinal = 0;
  int32_t ranks = 0;
  int32_t rank = 0;
#if TESSERA_HAVE_NCCL
  ncclComm_t comm = nullptr;
  float* scratch = nullptr;  // one device float for barrier()
  bool aborted = false;      // ncclCommAbort has freed comm: destroy must not touch it
#endif
};

namespace {

using tessera::sdk::fail;
using tessera::sdk::guarded;
using tessera::sdk::ok;

#if TESSERA_HAVE_NCCL

ts_status nccl_status(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return ok();
  return fail(
      r == ncclInvalidArgument || r == ncclInvalidUsage ? TS_ERR_INVALID_ARGUMENT : TS_ERR_INTERNAL,
      std::string(what) + ": " + ncclGetErrorString(r));
}

ts_status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return ok();
  return fail(TS_ERR_INTERNAL, std::string(what) + ": " + cudaGetErrorString(e));
}

ts_status nccl_version(int32_t* out) {
  return guarded([&]() -> ts_status {
    if (out == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "out is null");
    int v = 0;
    if (ts_status s = nccl_status(ncclGetVersion(&v), "ncclGetVersion"); s.code != TS_OK) return s;
    *out = v;
    return ok();
  });
}

ts_status unique_id(uint8_t out[TS_NCCL_UNIQUE_ID_BYTES]) {
  return guarded([&]() -> ts_status {
    if (out == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "out is null");
    static_assert(sizeof(ncclUniqueId) == TS_NCCL_UNIQUE_ID_BYTES);
    ncclUniqueId id;
    if (ts_status s = nccl_status(ncclGetUniqueId(&id), "ncclGetUniqueId"); s.code != TS_OK)
      return s;
    std::memcpy(out, &id, sizeof id);
    return ok();
  });
}

ts_status init_rank(int32_t ordinal, int32_t ranks, const uint8_t id[TS_NCCL_UNIQUE_ID_BYTES],
                    int32_t rank, ts_nccl_comm** out) {
  return guarded([&]() -> ts_status {
    if (out == nullptr || id == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "null argument");
    if (ranks < 1 || rank < 0 || rank >= ranks)
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "rank " + std::to_string(rank) + " of " + std::to_string(ranks));
    if (ts_status s = cuda_status(cudaSetDevice(ordinal), "cudaSetDevice"); s.code != TS_OK)
      return s;
    ncclUniqueId uid;
    std::memcpy(&uid, id, sizeof uid);
    auto comm = new ts_nccl_comm{ordinal, ranks, rank, nullptr, nullptr};
    if (ts_status s = cuda_status(cudaMalloc(&comm->scratch, sizeof(float)), "cudaMalloc");
        s.code != TS_OK) {
      delete comm;
      return s;
    }
    if (ts_status s =
            nccl_status(ncclCommInitRank(&comm->comm, ranks, uid, rank), "ncclCommInitRank");
        s.code != TS_OK) {
      cudaFree(comm->scratch);
      delete comm;
      return s;
    }
    *out = comm;
    return ok();
  });
}

ts_status destroy(ts_nccl_comm* comm) {
  return guarded([&]() -> ts_status {
    if (comm == nullptr) return ok();
    const ncclResult_t r = comm->aborted ? ncclSuccess : ncclCommDestroy(comm->comm);
    cudaSetDevice(comm->ordinal);
    cudaFree(comm->scratch);
    delete comm;
    return nccl_status(r, "ncclCommDestroy");
  });
}

ts_status abort_comm(ts_nccl_comm* comm) {
  return guarded([&]() -> ts_status {
    if (comm == nullptr || comm->aborted) return ok();
    comm->aborted = true;
    return nccl_status(ncclCommAbort(comm->comm), "ncclCommAbort");
  });
}

// In-place sum over the ranks of `count` values of `type`.
ts_status all_reduce_sum(ts_nccl_comm* comm, void* data, size_t count, ncclDataType_t type,
                         const char* what, void* stream) {
  return guarded([&]() -> ts_status {
    if (comm == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "comm is null");
    return nccl_status(ncclAllReduce(data, data, count, type, ncclSum, comm->comm,
                                     static_cast<cudaStream_t>(stream)),
                       what);
  });
}

ts_status all_reduce_sum_f32(ts_nccl_comm* comm, float* data, size_t count, void* stream) {
  return all_reduce_sum(comm, data, count, ncclFloat32, "ncclAllReduce", stream);
}

ts_status all_reduce_sum_bf16(ts_nccl_comm* comm, uint16_t* data, size_t count, void* stream) {
  return all_reduce_sum(comm, data, count, ncclBfloat16, "ncclAllReduce (bf16)", stream);
}

ts_status all_gather_f32(ts_nccl_comm* comm, const float* send, size_t count, float* recv,
                         void* stream) {
  return guarded([&]() -> ts_status {
    if (comm == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "comm is null");
    return nccl_status(ncclAllGather(send, recv, count, ncclFloat32, comm->comm,
                                     static_cast<cudaStream_t>(stream)),
                       "ncclAllGather");
  });
}

ts_status broadcast(ts_nccl_comm* comm, void* data, size_t bytes, int32_t root, void* stream) {
  return guarded([&]() -> ts_status {
    if (comm == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "comm is null");
    return nccl_status(ncclBroadcast(data, data, bytes, ncclUint8, root, comm->comm,
                                     static_cast<cudaStream_t>(stream)),
                       "ncclBroadcast");
  });
}

ts_status synchronize(ts_nccl_comm* comm, void* stream) {
  return guarded([&]() -> ts_status {
    if (comm == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "comm is null");
    if (ts_status s = cuda_status(cudaSetDevice(comm->ordinal), "cudaSetDevice"); s.code != TS_OK)
      return s;
    return cuda_status(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
                       "cudaStreamSynchronize");
  });
}

ts_status barrier(ts_nccl_comm* comm, void* stream) {
  return guarded([&]() -> ts_status {
    if (comm == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "comm is null");
    if (ts_status s =
            nccl_status(ncclAllReduce(comm->scratch, comm->scratch, 1, ncclFloat32, ncclSum,
                                      comm->comm, static_cast<cudaStream_t>(stream)),
                        "ncclAllReduce (barrier)");
        s.code != TS_OK)
      return s;
    return synchronize(comm, stream);
  });
}

#else  // built without NCCL

ts_status missing() { return fail(TS_ERR_UNSUPPORTED, "this CUDA module was built without NCCL"); }
ts_status nccl_version(int32_t*) { return missing(); }
ts_status unique_id(uint8_t*) { return missing(); }
ts_status init_rank(int32_t, int32_t, const uint8_t*, int32_t, ts_nccl_comm**) { return missing(); }
ts_status destroy(ts_nccl_comm*) { return ok(); }
ts_status abort_comm(ts_nccl_comm*) { return ok(); }
ts_status all_reduce_sum_f32(ts_nccl_comm*, float*, size_t, void*) { return missing(); }
ts_status all_reduce_sum_bf16(ts_nccl_comm*, uint16_t*, size_t, void*) { return missing(); }
ts_status all_gather_f32(ts_nccl_comm*, const float*, size_t, float*, void*) { return missing(); }
ts_status broadcast(ts_nccl_comm*, void*, size_t, int32_t, void*) { return missing(); }
ts_status synchronize(ts_nccl_comm*, void*) { return missing(); }
ts_status barrier(ts_nccl_comm*, void*) { return missing(); }

#endif

const ts_cuda_nccl_api kApi{sizeof(ts_cuda_nccl_api),
                            TS_CUDA_NCCL_API_VERSION,
                            nccl_version,
                            unique_id,
                            init_rank,
                            destroy,
                            abort_comm,
                            all_reduce_sum_f32,
                            all_gather_f32,
                            broadcast,
                            synchronize,
                            barrier,
                            all_reduce_sum_bf16};

}  // namespace

extern "C" __attribute__((visibility("default"))) const ts_cuda_nccl_api* tessera_cuda_nccl_entry(
    void) {
  return &kApi;
}
