#include "executor/device_rank.hpp"

namespace tessera {

DeviceRank::DeviceRank(Runtime& runtime, std::unique_ptr<device::Device> own_device,
                       std::unique_ptr<device::DeviceCommunicator> comm, int rank, int ranks)
    : own_device_(std::move(own_device)),
      device_(own_device_ != nullptr ? *own_device_ : *runtime.device()),
      stream_(device_.create_stream()),
      weights_(dsv4::upload_model_weights(
          device_, stream_, runtime.options().model_dir, runtime.model_config(),
          {rank, ranks, runtime.options().expert_parallel}, kv_pool_bytes(runtime.options()))),
      view_(dsv4::view_device_weights(
          weights_, runtime.model_config(), device_, stream_,
          dsv4::local_experts({rank, ranks, runtime.options().expert_parallel},
                              runtime.model_config().n_routed_experts))),
      kv_(create_rank_kv(runtime.registry(), runtime.options(), runtime.model_config(), &device_,
                         &stream_)),
      comm_(std::move(comm)) {
  model_ = std::make_unique<dsv4::DeviceModel>(runtime.model_config(), view_, device_, stream_,
                                               *kv_.format, kv_.attention, *kv_.pools);
  model_->set_share(ranks, comm_.get());
  model_->set_bf16_collectives(runtime.options().bf16_collectives);
  model_->set_cuda_graphs(runtime.options().cuda_graphs, runtime.options().cuda_graph_max_batch);
}

}  // namespace tessera
