// The tensor-parallel executor (ARCHITECTURE.md "Executor", docs/engine.md): one rank per device,
// one thread per rank, in one process. Rank 0 runs on the caller's thread (the engine loop): it
// applies cache operations at once, and at each step broadcasts the plan (the operations queued
// since the last step + the chunks) to ranks 1..N-1, which run on their own threads. All ranks
// then run the forward together (all-reduce / all-gather through a deterministic
// HostCommunicator); the logits come back on rank 0.
//
// CPU ranks and BLAS threads: OpenBLAS's thread count is process-wide, so with N > 1 ranks it is
// set to max(1, threads / N) (threads = executor.threads, or the hardware threads): on 2 cores TP=2
// runs each rank's BLAS single-threaded on its own core.
//
// Thread-safety: every method is for the thread that created the executor (the engine loop).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device/device_communicator.hpp"
#include "executor/device_rank.hpp"
#include "executor/host_communicator.hpp"
#include "executor/rank.hpp"
#include "executor/step_plan.hpp"
#include "runtime/rank_kv.hpp"
#include "runtime/runtime.hpp"

namespace tessera {

class Executor {
 public:
  // threads: CPU threads for all ranks together (0: hardware threads). reduction_parts:
  // executor.reduction_parts (docs/engine.md "Determinism"; checked by check_reduction_parts).
  Executor(Runtime& runtime, int tensor_parallel, int threads = 0, int reduction_parts = 1);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  int ranks() const { return static_cast<int>(ranks_.size()); }
  // Rank 0: its sequences and pools are what the scheduler plans with.
  const Rank& leader() const { return *ranks_.front(); }

  // Applies `op` on rank 0 now and on the other ranks before their next forward.
  void apply(const CacheOp& op);
  // One forward on every rank; rank 0's logits (full vocabulary).
  dsv4::Logits step(const std::vector<PlannedChunk>& chunks);
  // True once a rank failed: the group is aborted and every further step throws.
  bool failed() const { return group_ && group_->aborted(); }
  // Fault injection for tests of the failure path: rank `rank` (1..N-1) throws tessera::Error
  // with `message` instead of its next forward, as a rank whose allocation or plugin fails
  // does; the group aborts and rank 0's step throws.
  void fail_rank_at_next_step(int rank, std::string message);
  // device = "cuda" with several ranks: each rank's device, as Device::describe() names it.
  const std::vector<std::string>& rank_devices() const { return rank_devices_; }

 private:
  void start_device_ranks(int tensor_parallel);
  void worker_loop(int rank);
  void broadcast_plan(const StepPlan& plan);
  // Aborts the host group and the NCCL collectives: every rank's pending and later collectives
  // end with an error instead of waiting for the failed rank.
  void abort_group(const std::string& reason);

  Runtime& runtime_;
  std::unique_ptr<HostCommGroup> group_;          // null for one rank
  std::vector<std::unique_ptr<RankKv>> rank_kv_;  // ranks 1..N-1 (rank 0 uses the runtime's)
  std::vector<std::shared_ptr<const dsv4::ModelWeights>> shards_;
  // device = "cuda" with several ranks: rank 0's collectives, ranks 1..N-1's device state.
  std::unique_ptr<device::DeviceCommunicator> leader_comm_;
  std::vector<std::unique_ptr<DeviceRank>> device_ranks_;
  std::vector<device::DeviceCommunicator*> device_comms_;  // every rank's, rank 0's first
  std::vector<std::string> rank_devices_;
  std::atomic<bool> collectives_aborted_{false};
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::vector<CacheOp> queued_ops_;  // for ranks 1..N-1
  std::vector<std::thread> workers_;
  std::atomic<int> failing_rank_{0};  // 0: none (fail_rank_at_next_step)
  std::string failure_message_;       // written before the plan that carries it is broadcast
};

}  // namespace tessera
