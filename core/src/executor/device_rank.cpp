#include "executor/device_rank.hpp"

#include "executor/host_memory_communicator.hpp"

namespace tessera {

DeviceRank::DeviceRank(Runtime& runtime, HostCommGroup& group, int rank, int ranks)
    : stream_(runtime.device()->create_stream()),
      weights_(dsv4::upload_model_weights(
          *runtime.device(), stream_, runtime.options().model_dir, runtime.model_config(),
          {rank, ranks, runtime.options().expert_parallel}, kv_pool_bytes(runtime.options()))),
      view_(dsv4::view_device_weights(
          weights_, runtime.model_config(), *runtime.device(), stream_,
          dsv4::local_experts({rank, ranks, runtime.options().expert_parallel},
                              runtime.model_config().n_routed_experts))),
      kv_(create_rank_kv(runtime.registry(), runtime.options(), runtime.model_config(),
                         runtime.device(), &stream_)),
      comm_(make_host_memory_communicator(group, rank, *runtime.device())) {
  model_ = std::make_unique<dsv4::DeviceModel>(runtime.model_config(), view_, *runtime.device(),
                                               stream_, *kv_.format, kv_.attention, *kv_.pools);
  model_->set_share(ranks, comm_.get());
  model_->set_bf16_collectives(runtime.options().bf16_collectives);
}

}  // namespace tessera
