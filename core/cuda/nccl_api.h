/* NCCL collectives of the CUDA device module (docs/engine.md "Tensor parallelism"): the C table
 * through which executor ranks on GPUs all-reduce, all-gather and broadcast device buffers. It
 * lives in libtessera_cuda.so next to device_api.h, so the core never links NCCL; the core wraps
 * it as a tessera::Communicator (nccl_communicator.hpp).
 *
 * One communicator per rank; every rank calls the collectives in the same order. Calls enqueue on
 * `stream` (NULL: the legacy default stream) and return; synchronize() waits for them. NCCL's ring
 * reductions add in a fixed order for a fixed rank count, so every rank gets bit-identical
 * results. Thread-safety: a communicator is used by its rank's thread only; unique_id, version
 * and abort may be called from any thread. */
#ifndef TESSERA_CUDA_NCCL_API_H
#define TESSERA_CUDA_NCCL_API_H

#include <stddef.h>
#include <stdint.h>

#include "tessera/plugin_abi.h" /* ts_status */

#ifdef __cplusplus
extern "C" {
#endif

#define TS_CUDA_NCCL_API_VERSION 2
#define TS_CUDA_NCCL_ENTRY_SYMBOL "tessera_cuda_nccl_entry"
#define TS_NCCL_UNIQUE_ID_BYTES 128

typedef struct ts_nccl_comm ts_nccl_comm; /* opaque, one per rank */

typedef struct ts_cuda_nccl_api {
  uint32_t struct_size;
  uint32_t version; /* TS_CUDA_NCCL_API_VERSION */
  /* NCCL's version code (e.g. 22809); TS_ERR_UNSUPPORTED when the module was built without it. */
  ts_status (*nccl_version)(int32_t* out);
  /* Made once (by rank 0) and handed to every rank. */
  ts_status (*unique_id)(uint8_t out[TS_NCCL_UNIQUE_ID_BYTES]);
  /* Joins the group as `rank` of `ranks` on device `ordinal`; blocks until every rank has joined
   * (call from each rank's own thread). */
  ts_status (*init_rank)(int32_t ordinal, int32_t ranks, const uint8_t id[TS_NCCL_UNIQUE_ID_BYTES],
                         int32_t rank, ts_nccl_comm** out);
  ts_status (*destroy)(ts_nccl_comm* comm);
  /* Ends every pending collective of the group with an error (a rank failed). */
  ts_status (*abort)(ts_nccl_comm* comm);
  ts_status (*all_reduce_sum_f32)(ts_nccl_comm* comm, float* data, size_t count, void* stream);
  /* recv: ranks * count floats, rank r's send at r * count. */
  ts_status (*all_gather_f32)(ts_nccl_comm* comm, const float* send, size_t count, float* recv,
                              void* stream);
  ts_status (*broadcast)(ts_nccl_comm* comm, void* data, size_t bytes, int32_t root, void* stream);
  ts_status (*synchronize)(ts_nccl_comm* comm, void* stream);
  /* Returns when every rank has called it (a one-float all-reduce, then synchronize). */
  ts_status (*barrier)(ts_nccl_comm* comm, void* stream);
  /* Version 2: the sum of bf16 values (uint16_t bits), in place. */
  ts_status (*all_reduce_sum_bf16)(ts_nccl_comm* comm, uint16_t* data, size_t count, void* stream);
} ts_cuda_nccl_api;

typedef const ts_cuda_nccl_api* (*ts_cuda_nccl_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_CUDA_NCCL_API_H */
