#include "runtime/runtime_options.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "ops/gemm_nt.hpp"
#include "ops/linear.hpp"
#include "util/check.hpp"

namespace tessera {

namespace {

std::filesystem::path resolve_model_path(const Config& config) {
  const std::filesystem::path raw(config.model.path);
  if (raw.is_absolute() || std::filesystem::exists(raw)) {
    return raw;
  }
  const auto beside = std::filesystem::path(config.source_name).parent_path() / raw;
  if (std::filesystem::exists(beside)) {
    return beside;
  }
  throw Error(config.location_of("model.path").to_string() + ": model directory `" + raw.string() +
              "` not found (looked in the working directory and next to the "
              "config file)");
}

// Every value of `config` the options carry, model.path aside; no checks.
void copy_values(const Config& config, RuntimeOptions& o) {
  o.kv_plugin = config.kv_cache.plugin;
  o.kv_options_json = config.kv_cache.options_json.empty() ? "{}" : config.kv_cache.options_json;
  o.attention_plugin = config.attention.plugin;
  o.attention_options_json =
      config.attention.options_json.empty() ? "{}" : config.attention.options_json;
  o.sampler_plugin = config.sampler.plugin;
  o.sampler_options_json = config.sampler.options_json.empty() ? "{}" : config.sampler.options_json;
  o.page_size = config.kv_cache.page_size;
  o.memory_gib = config.kv_cache.memory_gib;
  o.max_context = config.model.max_context;
  o.max_running_sequences = config.scheduler.max_running_sequences;
  o.plugin_dirs.assign(config.plugins.search_path.begin(), config.plugins.search_path.end());
  o.linear_weights_in_bf16 = config.model.weight_storage != "fp32";
  // "auto" is fp32 on the CPU (the reference path); "bf16" is an opt-in with its own numerics.
  o.bf16_activations = config.model.dtype == "bf16";
  o.device = config.executor.device;
  o.cuda_module = config.executor.cuda_module;
  o.cpu_device_forward = o.device != "cuda" && config.executor.cpu_forward == "device";
  o.tensor_parallel = static_cast<int>(config.executor.tensor_parallel);
  o.expert_parallel = config.executor.moe_split == "ep";
  o.bf16_collectives = config.executor.collective_dtype == "bf16";
  o.cuda_graphs = config.executor.cuda_graphs;
  o.cuda_graph_max_batch = config.executor.cuda_graph_max_batch;
  TS_CHECK(!o.bf16_collectives || o.device_forward(),
           "{}: collective_dtype = \"bf16\" is for the device forward's ranks (device = "
           "\"cuda\", or cpu_forward = \"device\"); the host forward's ranks sum in fp32: use "
           "collective_dtype = \"fp32\"",
           config.location_of("executor.collective_dtype").to_string());
  // The same configuration on the SIMT emulator (CI, machines without a GPU): the environment
  // names the module instead of the file, and the log says so.
  if (const char* env = std::getenv("TESSERA_CUDA_MODULE"); env != nullptr && *env != '\0') {
    if (o.device == "cuda") {
      spdlog::warn("executor.cuda_module = \"{}\" from TESSERA_CUDA_MODULE (the file says \"{}\")",
                   env, o.cuda_module);
    }
    o.cuda_module = env;
  }
}

}  // namespace

RuntimeOptions::RuntimeOptions() {
  static const Config defaults = default_config();
  copy_values(defaults, *this);
}

RuntimeOptions RuntimeOptions::from_config(const Config& config) {
  RuntimeOptions o;
  copy_values(config, o);
  o.model_dir = resolve_model_path(config);
  if (o.device_forward()) {
    TS_CHECK(config.model.dtype != "bf16",
             "{}: model.dtype = \"bf16\" selects the host forward's bf16-activation GEMMs; the "
             "device forward ({}) computes in fp32, FP8 layers as W8A8: use \"auto\"",
             config.location_of("model.dtype").to_string(),
             o.device == "cuda" ? "device = \"cuda\"" : "cpu_forward = \"device\"");
    TS_CHECK(config.executor.reduction_parts == 1,
             "{}: reduction_parts = {} splits the host forward's products; the device forward "
             "({}) takes 1",
             config.location_of("executor.reduction_parts").to_string(),
             config.executor.reduction_parts,
             o.device == "cuda" ? "device = \"cuda\"" : "cpu_forward = \"device\"");
  }
  TS_CHECK(!o.expert_parallel || o.device_forward(),
           "{}: moe_split = \"ep\" runs on the device forward's ranks (device = \"cuda\", or "
           "cpu_forward = \"device\"); the host forward's ranks cut the experts by tensor "
           "parallelism: use moe_split = \"tp\"",
           config.location_of("executor.moe_split").to_string());
  if (o.bf16_activations) {
    TS_CHECK(ops::gemm_nt_bf16_available() && ops::gemm_reads_bf16_weights(),
             "{}: model.dtype = \"bf16\" needs a CPU with AVX512_BF16 and our AVX-512 GEMM (this "
             "one runs {}{}); use \"auto\" or \"fp32\"",
             config.location_of("model.dtype").to_string(), ops::gemm_backend_name(),
             ops::gemm_nt_bf16_available() ? "" : ", no AVX512_BF16");
    TS_CHECK(o.linear_weights_in_bf16,
             "{}: model.dtype = \"bf16\" multiplies the weights held in bf16, and "
             "model.weight_storage = \"fp32\" holds none; use weight_storage = \"auto\"",
             config.location_of("model.dtype").to_string());
  }
  return o;
}

}  // namespace tessera
