#include "executor/executor.hpp"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "device/nccl_group.hpp"
#include "device/open_device.hpp"
#include "executor/host_memory_communicator.hpp"
#include "executor/weight_sharding.hpp"
#include "model/weight_panels.hpp"
#include "model/weight_placement.hpp"
#include "ops/compute_threads.hpp"
#include "ops/linear.hpp"
#include "util/check.hpp"

namespace tessera {

Executor::Executor(Runtime& runtime, int tensor_parallel, int threads, int reduction_parts)
    : runtime_(runtime) {
  const dsv4::ModelConfig& config = runtime.model_config();
  check_tensor_parallel(config, tensor_parallel);
  check_reduction_parts(config, tensor_parallel, reduction_parts);
  const int parts_per_rank = std::max(1, reduction_parts / tensor_parallel);  // 1 when off
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int total = threads > 0 ? threads : hw;
  if (tensor_parallel > 1 || threads > 0) {
    ops::set_compute_threads(std::max(1, total / tensor_parallel));
  }

  if (runtime.on_device()) {
    TS_CHECK(runtime.options().tensor_parallel == tensor_parallel,
             "executor: tensor_parallel = {}, the runtime placed the shares of {} ranks",
             tensor_parallel, runtime.options().tensor_parallel);
    TS_CHECK(reduction_parts == 1,
             "executor.reduction_parts = {} splits the host forward's products; the device forward "
             "takes 1",
             reduction_parts);
    ranks_.push_back(std::make_unique<Rank>(config, runtime.model(), runtime.pools()));
    if (tensor_parallel == 1) {
      return;
    }
    start_device_ranks(tensor_parallel);
    return;
  }
  if (tensor_parallel == 1) {
    shards_.push_back(runtime.weights());
    ranks_.push_back(std::make_unique<Rank>(config, *runtime.weights(), runtime.kv_format(),
                                            runtime.attention(), runtime.pools(), nullptr));
    ranks_.back()->set_bf16_activations(runtime.options().bf16_activations);
    ranks_.back()->set_reduction_parts(parts_per_rank);
    return;
  }
  group_ = std::make_unique<HostCommGroup>(tensor_parallel);
  const RuntimeOptions& o = runtime.options();
  for (int r = 0; r < tensor_parallel; ++r) {
    dsv4::ModelWeights shard = shard_model_weights(config, *runtime.weights(), r, tensor_parallel);
    dsv4::pack_linear_weights_into_panels(shard, o.bf16_activations);
    dsv4::place_linear_weights_on_huge_pages(shard);  // final: the rank only reads them now
    shards_.push_back(std::make_shared<const dsv4::ModelWeights>(std::move(shard)));
    if (r == 0) {
      ranks_.push_back(std::make_unique<Rank>(config, *shards_[0], runtime.kv_format(),
                                              runtime.attention(), runtime.pools(),
                                              &group_->communicator(0)));
      continue;
    }
    auto kv = std::make_unique<RankKv>(create_rank_kv(runtime.registry(), o, config));
    ranks_.push_back(std::make_unique<Rank>(config, *shards_[static_cast<size_t>(r)], *kv->format,
                                            kv->attention, *kv->pools, &group_->communicator(r)));
    rank_kv_.push_back(std::move(kv));
  }
  for (auto& rank : ranks_) {
    rank->set_bf16_activations(o.bf16_activations);
    rank->set_reduction_parts(parts_per_rank);
  }
  for (int r = 1; r < tensor_parallel; ++r) {
    workers_.emplace_back([this, r] { worker_loop(r); });
  }
  spdlog::info("executor: tensor_parallel = {} CPU ranks, {} compute thread(s) per rank, GEMM {}",
               tensor_parallel, ops::compute_threads(), ops::gemm_backend_name());
}

// Ranks 1..N-1, each with its share of the weights, its own stream, kv pools and collectives
// (executor/device_rank.hpp); rank 0 is the runtime's device forward. Rank r computes on device
// ordinal (rank 0's + r) when the module has that many: GPUs joined by NCCL, or emulated devices
// joined by the host group. With fewer, emulated ranks share rank 0's device; so do the cpu
// backend's ranks (a stream each, joined by the host group); GPU ranks are refused (NCCL takes
// one rank per GPU).
void Executor::start_device_ranks(int tensor_parallel) {
  device::Device& leader = *runtime_.device();
  const bool host_collectives = leader.emulated() || leader.kind() == device::DeviceKind::kCpu;
  const bool own_devices = leader.kind() != device::DeviceKind::kCpu &&
                           leader.device_count() - leader.ordinal() >= tensor_parallel;
  TS_CHECK(own_devices || host_collectives,
           "executor.tensor_parallel = {} on {}: one GPU per rank is needed (NCCL takes one rank "
           "per GPU), and the CUDA module reports {} device(s)",
           tensor_parallel, leader.describe(), leader.device_count());
  std::vector<std::unique_ptr<device::Device>> devices(static_cast<size_t>(tensor_parallel));
  std::vector<device::Device*> on(static_cast<size_t>(tensor_parallel), &leader);
  for (int r = 1; own_devices && r < tensor_parallel; ++r) {
    devices[static_cast<size_t>(r)] =
        device::open_device({"cuda", leader.ordinal() + r, runtime_.options().cuda_module});
    on[static_cast<size_t>(r)] = devices[static_cast<size_t>(r)].get();
  }
  group_ = std::make_unique<HostCommGroup>(tensor_parallel);  // the step plans, and emulated data
  std::vector<std::unique_ptr<device::DeviceCommunicator>> comms;
  if (host_collectives) {
    for (int r = 0; r < tensor_parallel; ++r) {
      comms.push_back(make_host_memory_communicator(*group_, r, *on[static_cast<size_t>(r)]));
    }
  } else {
    comms = device::join_nccl_group(on);
  }
  for (auto& comm : comms) {
    device_comms_.push_back(comm.get());
  }
  leader_comm_ = std::move(comms[0]);
  runtime_.device_model()->set_share(tensor_parallel, leader_comm_.get());
  rank_devices_.push_back(leader.describe());
  for (int r = 1; r < tensor_parallel; ++r) {
    const auto i = static_cast<size_t>(r);
    auto rank = std::make_unique<DeviceRank>(runtime_, std::move(devices[i]), std::move(comms[i]),
                                             r, tensor_parallel);
    rank_devices_.push_back(rank->device().describe());
    ranks_.push_back(std::make_unique<Rank>(runtime_.model_config(), rank->model(), rank->pools()));
    device_ranks_.push_back(std::move(rank));
  }
  for (int r = 1; r < tensor_parallel; ++r) {
    workers_.emplace_back([this, r] { worker_loop(r); });
  }
  spdlog::info("executor: tensor_parallel = {} ranks on {} ({}), collectives {}", tensor_parallel,
               own_devices ? "a device each" : "one device, a stream each",
               fmt::join(rank_devices_, "; "), host_collectives ? "through host memory" : "NCCL");
}

void Executor::abort_group(const std::string& reason) {
  group_->abort(reason);
  if (collectives_aborted_.exchange(true)) {
    return;  // another rank's thread aborted them
  }
  for (device::DeviceCommunicator* comm : device_comms_) {
    if (comm->enqueued()) {  // NCCL: ends the collectives the other ranks' streams wait in
      comm->abort_group(reason.c_str());
    }
  }
}

Executor::~Executor() {
  if (!workers_.empty()) {
    try {
      if (!group_->aborted()) {
        StepPlan stop;
        stop.shutdown = true;
        broadcast_plan(stop);
      }
    } catch (const std::exception& e) {
      spdlog::error("executor: shutdown: {}", e.what());
    }
    for (std::thread& t : workers_) {
      t.join();
    }
  }
  ranks_.clear();                 // sequences and snapshots release their pages before the pools go
  if (leader_comm_ != nullptr) {  // the runtime outlives us: its share no longer has a group
    runtime_.device_model()->set_share(runtime_.options().tensor_parallel, nullptr);
  }
}

void Executor::apply(const CacheOp& op) {
  ranks_.front()->apply(op);
  if (ranks_.size() > 1) {
    queued_ops_.push_back(op);
  }
}

void Executor::broadcast_plan(const StepPlan& plan) {
  Communicator& comm = group_->communicator(0);
  std::vector<uint8_t> bytes = serialize_plan(plan);
  uint64_t n = bytes.size();
  comm.broadcast(&n, sizeof n, 0);
  comm.broadcast(bytes.data(), bytes.size(), 0);
}

dsv4::Logits Executor::step(const std::vector<PlannedChunk>& chunks) {
  if (ranks_.size() == 1) {
    return ranks_.front()->forward(chunks);
  }
  try {
    StepPlan plan;
    plan.ops = std::move(queued_ops_);
    queued_ops_.clear();
    plan.chunks = chunks;
    broadcast_plan(plan);
    return ranks_.front()->forward(chunks);
  } catch (const std::exception& e) {
    abort_group(std::string("rank 0: ") + e.what());
    throw;
  }
}

void Executor::fail_rank_at_next_step(int rank, std::string message) {
  TS_CHECK(rank >= 1 && rank < ranks(), "executor: no worker rank {} among {} ranks", rank,
           ranks());
  failure_message_ = std::move(message);
  failing_rank_.store(rank);
}

void Executor::worker_loop(int rank) {
  Communicator& comm = group_->communicator(rank);
  Rank& self = *ranks_[static_cast<size_t>(rank)];
  try {
    for (;;) {
      uint64_t n = 0;
      comm.broadcast(&n, sizeof n, 0);
      std::vector<uint8_t> bytes(n);
      comm.broadcast(bytes.data(), bytes.size(), 0);
      const StepPlan plan = deserialize_plan(bytes);
      if (plan.shutdown) {
        return;
      }
      for (const CacheOp& op : plan.ops) {
        self.apply(op);
      }
      if (!plan.chunks.empty()) {
        if (failing_rank_.load() == rank) {
          throw Error(failure_message_);
        }
        self.forward(plan.chunks);
      }
    }
  } catch (const std::exception& e) {
    if (!group_->aborted()) {
      spdlog::error("executor: rank {} failed: {}", rank, e.what());
    }
    abort_group("rank " + std::to_string(rank) + ": " + e.what());
  }
}

}  // namespace tessera
