// RuntimeOptions: what a Runtime is built from. The configuration schema (config_schema.cpp) is
// the one source of every default: RuntimeOptions{} holds the options of a configuration that
// sets nothing (default_config()), model_dir aside. Code that builds options by hand (benches,
// tests) starts from those and changes what it needs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace tessera {

struct RuntimeOptions {
  RuntimeOptions();  // the schema's defaults; model_dir empty

  std::filesystem::path model_dir;     // model.path, resolved
  std::string kv_plugin;               // kv_cache.plugin
  std::string kv_options_json;         // [kv_cache.options] as JSON, "{}" when none
  std::string attention_plugin;        // attention.plugin
  std::string attention_options_json;  // [attention.options]
  std::string sampler_plugin;          // sampler.plugin
  std::string sampler_options_json;    // [sampler.options]
  int64_t page_size{};                 // kv_cache.page_size
  double memory_gib{};                 // kv_cache.memory_gib
  int64_t max_context{};               // model.max_context; 0: the model's maximum
  // scheduler.max_running_sequences: on a device, the compressor rings' slots (one per running
  // sequence; kv/compressor_rings.hpp), taken from the kv cache's memory.
  int64_t max_running_sequences{};
  std::vector<std::filesystem::path> plugin_dirs;  // plugins.search_path: before the default path
  // Linear weights whose values are all bfloat16 (every BF16 / FP8 / FP4 checkpoint's) are kept
  // in bf16 (model/bf16_weights.hpp) where our GEMM reads them (ops::gemm_reads_bf16_weights):
  // same outputs, half their bytes. model.weight_storage = "auto".
  bool linear_weights_in_bf16{};
  // model.dtype = "bf16": linear layers whose weight is held in bf16 take bf16-rounded inputs and
  // multiply on AMX tiles or vdpbf16ps (fp32 sums; ops/gemm_nt.hpp); everything else stays fp32.
  // Needs AVX512_BF16.
  bool bf16_activations{};
  // executor.device: "cpu" or "cuda" (one GPU, the device forward: model/device_model.hpp), and
  // executor.cuda_module: which CUDA device module serves it.
  std::string device;
  std::string cuda_module;
  // executor.cpu_forward = "device": device = "cpu" runs the device forward on the device layer's
  // cpu backend (model/device_model.hpp) instead of the host forward (model/dsv4_model.hpp).
  bool cpu_device_forward{};
  // The device forward runs the ranks: device = "cuda", or cpu_forward = "device".
  [[nodiscard]] bool device_forward() const { return device == "cuda" || cpu_device_forward; }
  // executor.tensor_parallel: under the device forward the runtime places rank 0's share of the
  // checkpoint (the executor places the other ranks'); the host forward's runtime holds the whole
  // model and the executor cuts the shares.
  int tensor_parallel{};
  // executor.moe_split = "ep": each device rank holds E / tensor_parallel whole routed experts
  // (model/device_shard.hpp); "tp" cuts every expert's width.
  bool expert_parallel{};
  // executor.collective_dtype = "bf16": the device ranks' all-reduces exchange bf16 values
  // (model/device_model.cpp); "fp32" by default.
  bool bf16_collectives{};
  // executor.cuda_graphs: decode steps of a device model replay piecewise CUDA graphs
  // (model/piecewise_graphs.hpp).
  bool cuda_graphs = true;
  // executor.cuda_graph_max_batch: the largest graph bucket (model/piecewise_graphs.hpp).
  int64_t cuda_graph_max_batch = 256;

  // The parts of a configuration file the runtime needs; model.path is resolved against the
  // working directory, then against the config file's directory. Throws Error, with the key's
  // location, for values the schema accepts but this build path cannot honour.
  static RuntimeOptions from_config(const Config& config);
};

}  // namespace tessera
