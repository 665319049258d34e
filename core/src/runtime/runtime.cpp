#include "runtime/runtime.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "device/open_device.hpp"
#include "device/plugin_device.hpp"
#include "model/bf16_weights.hpp"
#include "model/graphed_attention.hpp"
#include "model/weight_panels.hpp"
#include "model/weight_placement.hpp"
#include "ops/gemm_nt.hpp"
#include "ops/linear.hpp"
#include "util/check.hpp"

namespace tessera {

Runtime::Runtime(const RuntimeOptions& options) : options_(options) { build(nullptr, nullptr); }

Runtime::Runtime(const RuntimeOptions& options, SharedModel shared) : options_(options) {
  if (options_.device_forward()) {
    TS_CHECK(shared.device != nullptr,
             "runtime: the device forward can share only the model of another runtime on a "
             "device");
    std::vector<std::filesystem::path> dirs = options_.plugin_dirs;
    for (auto& d : PluginRegistry::default_search_path()) {
      dirs.push_back(d);
    }
    registry_.discover(dirs);
    model_config_ = dsv4::load_model_config(options_.model_dir);
    build_on_device(std::move(shared.device));
    return;
  }
  TS_CHECK(shared.host != nullptr,
           "runtime: device = \"{}\" can share only the model of another runtime in host memory",
           options_.device);
  build(nullptr, std::move(shared.host));
}

Runtime::Runtime(const RuntimeOptions& options, const dsv4::ModelConfig& config,
                 std::shared_ptr<const dsv4::ModelWeights> weights)
    : options_(options) {
  build(&config, std::move(weights));
}

void Runtime::build(const dsv4::ModelConfig* config,
                    std::shared_ptr<const dsv4::ModelWeights> weights) {
  // from_config refuses this with the key's location; options built in code (benches, tests)
  // meet the same check here.
  TS_CHECK(!options_.bf16_activations || ops::gemm_nt_bf16_available(),
           "bf16 activations (model.dtype = \"bf16\") need a CPU with AVX512_BF16; this one has "
           "none");
  std::vector<std::filesystem::path> dirs = options_.plugin_dirs;
  for (auto& d : PluginRegistry::default_search_path()) {
    dirs.push_back(d);
  }
  registry_.discover(dirs);

  model_config_ = config ? *config : dsv4::load_model_config(options_.model_dir);
  if (options_.device_forward()) {
    TS_CHECK(config == nullptr && !weights,
             "runtime: the device forward loads its checkpoint from model.path itself");
    build_on_device(nullptr);
    return;
  }
  TS_CHECK(options_.device.empty() || options_.device == "cpu",
           "runtime: unknown device \"{}\" (cpu, cuda)", options_.device);
  if (weights) {
    // The bf16-activation kernels read bf16 weights as rows (model/weight_panels.hpp).
    bool bf16_panels = false;
    if (options_.bf16_activations) {
      dsv4::for_each_linear_weight(
          *weights, [&](const dsv4::Tensor& t) { bf16_panels |= t.in_bf16_panels(); });
    }
    TS_CHECK(!bf16_panels,
             "bf16 activations (model.dtype = \"bf16\") need bf16 weights as rows; these were "
             "packed into panels: pack them with keep_bf16_rows");
    weights_ = std::move(weights);
  } else {
    dsv4::ModelWeights loaded = dsv4::load_model_weights(options_.model_dir, model_config_);
    if (options_.linear_weights_in_bf16 && ops::gemm_reads_bf16_weights()) {
      const dsv4::Bf16Summary kept = dsv4::keep_linear_weights_in_bf16(loaded);
      spdlog::info("runtime: {} linear weights kept in bf16 ({:.1f} MiB less), {} in fp32",
                   kept.tensors, kept.bytes_saved / 1048576.0, kept.kept_fp32);
    } else if (options_.linear_weights_in_bf16) {
      spdlog::info(
          "runtime: linear weights kept in fp32 (GEMM {}: bf16 weights need our AVX-512 "
          "kernel)",
          ops::gemm_backend_name());
    }
    dsv4::pack_linear_weights_into_panels(loaded, options_.bf16_activations);
    const dsv4::PlacementSummary placed = dsv4::place_linear_weights_on_huge_pages(loaded);
    spdlog::info(
        "runtime: {:.1f} MiB of linear weights placed in one arena ({:.1f} MiB advised "
        "onto 2 MiB pages)",
        placed.bytes / 1048576.0, placed.advised_bytes / 1048576.0);
    weights_ = std::make_shared<const dsv4::ModelWeights>(std::move(loaded));
  }

  kv_ = create_rank_kv(registry_, options_, model_config_);
  sampler_ = registry_.create(registry_.find(TS_KIND_SAMPLER, options_.sampler_plugin),
                              options_.sampler_options_json, device::kHostPluginDevice);
  auto model = std::make_unique<dsv4::Model>(model_config_, *weights_, *kv_.format, kv_.attention,
                                             *kv_.pools);
  model->set_bf16_activations(options_.bf16_activations);
  model_ = std::move(model);
  log_summary();
}

void Runtime::build_on_device(std::shared_ptr<const DeviceResidentModel> shared) {
  if (shared == nullptr) {
    auto placed = std::make_shared<DeviceResidentModel>();
    placed->device = device::open_device({options_.device, 0, options_.cuda_module});
    spdlog::info("runtime: device {}", placed->device->describe());
    const device::Stream upload = placed->device->create_stream();
    // Tensor parallelism: rank 0's share (the executor places the other ranks').
    const dsv4::RankShare share{0, std::max(1, options_.tensor_parallel), options_.expert_parallel};
    placed->weights = std::make_unique<dsv4::DeviceModelWeights>(
        dsv4::upload_model_weights(*placed->device, upload, options_.model_dir, model_config_,
                                   share, kv_pool_bytes(options_)));
    placed->view = std::make_unique<dsv4::DeviceModelView>(
        dsv4::view_device_weights(*placed->weights, model_config_, *placed->device, upload,
                                  dsv4::local_experts(share, model_config_.n_routed_experts)));
    shared = std::move(placed);
  } else {
    spdlog::info("runtime: the model already on {} is shared (no second copy)",
                 shared->device->describe());
  }
  on_device_ = std::move(shared);
  device::Device& device = *on_device_->device;
  stream_ = device.create_stream();
  kv_ = create_rank_kv(registry_, options_, model_config_, &device, &stream_);
  sampler_ = registry_.create(registry_.find(TS_KIND_SAMPLER, options_.sampler_plugin),
                              options_.sampler_options_json, device::kHostPluginDevice);
  auto model = std::make_unique<dsv4::DeviceModel>(model_config_, *on_device_->view, device,
                                                   stream_, *kv_.format, kv_.attention, *kv_.pools);
  model->set_share(std::max(1, options_.tensor_parallel), nullptr);
  model->set_bf16_collectives(options_.bf16_collectives);
  model->set_cuda_graphs(options_.cuda_graphs, options_.cuda_graph_max_batch);
  if (options_.cuda_graphs && device.graphs()) {
    const bool slots = kv_.format->stores_from_device_slots();
    const char* attention = kv_.attention.name();
    const char* kv = kv_.format->name();
    spdlog::info(
        "{}: decode steps of up to {} sequences replay CUDA graphs of the forward, per "
        "batch-size bucket; {} (executor.cuda_graphs = false: every step eagerly)",
        device.describe(), options_.cuda_graph_max_batch,
        !slots ? fmt::format("attention `{}`, the compressors and kv cache `{}` run eagerly "
                             "between them (no store_device_slots, ABI 1.6)",
                             attention, kv)
        : dsv4::GraphedAttention::capable(kv_.attention)
            ? fmt::format("attention `{}` and kv cache `{}` run inside them", attention, kv)
            : fmt::format("kv cache `{}` runs inside them, attention `{}` eagerly between "
                          "them (no \"cuda_graph\" shaped run, ABI 1.7)",
                          kv, attention));
  }
  device_model_ = model.get();
  model_ = std::move(model);
  log_summary();
}

void Runtime::log_summary() const {
  spdlog::info(
      "runtime: kv `{}` ({} B/entry main, {} B/entry indexer), {} + {} pages = {:.1f} MiB, "
      "~{} context tokens, compressor rings {:.1f} MiB; attention `{}`; sampler `{}`",
      kv_.format->name(), kv_.format->main_layout().bytes_per_entry,
      kv_.format->indexer_layout().bytes_per_entry, kv_.plan.main_pages, kv_.plan.indexer_pages,
      kv_.plan.bytes / 1048576.0, kv_.plan.token_capacity, kv_.plan.ring_bytes / 1048576.0,
      kv_.attention.name(), sampler_.name());
}

}  // namespace tessera
