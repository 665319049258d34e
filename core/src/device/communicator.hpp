// Collective operations between the tensor-parallel ranks of one model (ARCHITECTURE.md
// "Executor"). Each rank holds its own Communicator object and calls every collective in the same
// order as the other ranks; a call returns when the collective is complete for this rank.
// Buffers live where the rank computes: host memory for CPU ranks (HostCommunicator), device
// memory for CUDA ranks (NcclCommunicator in core/cuda/).
//
// Determinism: implementations reduce in a fixed order (rank 0 + rank 1 + ... in that order for
// every element), so every rank gets bit-identical results and a run is reproducible. A result
// still differs from the single-rank sum by fp32 reduction order (docs/engine.md).
//
// Thread-safety: one Communicator object per rank, used only by that rank's thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // data[i] = sum over ranks of data[i], in place, on every rank.
  virtual void all_reduce_sum(float* data, size_t count) = 0;
  // recv = concat over ranks r of send_r: recv[r * count + i] = send_r[i] (recv: size() * count).
  virtual void all_gather(const float* send, size_t count, float* recv) = 0;
  // Every rank's data = root's data (bytes).
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  // Returns when every rank has called it.
  virtual void barrier() = 0;
  // Makes every pending and future call on every rank of the group throw tessera::Error (one rank
  // failed; the others must not wait for it forever). Safe from any thread.
  virtual void abort_group(const char* reason) = 0;
};

}  // namespace tessera
