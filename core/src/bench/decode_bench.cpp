#include "bench/decode_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "bench/copy_bandwidth.hpp"
#include "model/bf16_weights.hpp"
#include "model/random_weights.hpp"
#include "model/weight_panels.hpp"
#include "model/weight_placement.hpp"
#include "ops/compute_threads.hpp"
#include "runtime/runtime.hpp"
#include "util/check.hpp"

namespace tessera::bench {

dsv4::ModelConfig bench_model_config(const std::string& preset) {
  dsv4::ModelConfig c;
  c.vocab_size = 16384;
  c.hidden_size = 512;
  c.num_layers = 8;
  c.num_heads = 8;
  c.head_dim = 128;
  c.rope_dim = 32;
  c.q_lora_rank = 256;
  c.o_groups = 4;
  c.o_lora_rank = 128;
  c.window = 128;
  c.compress_ratios = {0, 4, 128, 4, 128, 4, 128, 4};
  c.yarn = {true, 16, 65536, 32, 1};
  c.max_position_embeddings = 1 << 20;
  c.index_n_heads = 4;
  c.index_head_dim = 64;
  c.index_topk = 64;
  c.num_hash_layers = 2;
  c.n_routed_experts = 8;
  c.experts_per_token = 2;
  c.moe_intermediate_size = 256;
  c.routed_scaling_factor = 1.5;
  if (preset == "tiny") {
    c.vocab_size = 512;
    c.hidden_size = 64;
    c.num_layers = 4;
    c.num_heads = 4;
    c.head_dim = 32;
    c.rope_dim = 8;
    c.q_lora_rank = 32;
    c.o_groups = 2;
    c.o_lora_rank = 16;
    c.compress_ratios = {0, 4, 128, 4};
    c.index_n_heads = 2;
    c.index_head_dim = 16;
    c.index_topk = 4;
    c.n_routed_experts = 4;
    c.moe_intermediate_size = 32;
  } else {
    TS_CHECK(preset == "50m", "unknown bench preset `{}` (use 50m or tiny)", preset);
  }
  return c;
}

std::shared_ptr<const dsv4::ModelWeights> bench_model_weights(const dsv4::ModelConfig& config,
                                                              bool bf16, bool bf16_activations) {
  dsv4::ModelWeights random = dsv4::random_model_weights(config, 7);
  if (bf16) {
    dsv4::round_linear_weights_to_bf16(random);
    dsv4::keep_linear_weights_in_bf16(random);
  }
  dsv4::pack_linear_weights_into_panels(random, bf16_activations);
  dsv4::place_linear_weights_on_huge_pages(random);
  return std::make_shared<const dsv4::ModelWeights>(std::move(random));
}

DecodeBenchResult run_decode_bench(const DecodeBenchOptions& options) {
  const dsv4::ModelConfig config = bench_model_config(options.preset);
  // The decode and the copy loop use the same number of threads, so the ratio compares like
  // with like (and OpenBLAS does not oversubscribe a busy machine).
  const int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  ops::set_compute_threads(threads);
  const auto weights = bench_model_weights(config, options.bf16_weights);
  RuntimeOptions ro;
  if (!options.plugin_dir.empty()) ro.plugin_dirs = {options.plugin_dir};
  ro.memory_gib = 0.25;
  ro.max_context = 4096;
  Runtime rt(ro, config, weights);
  auto seq = rt.new_sequence();
  std::vector<int32_t> prompt(static_cast<size_t>(options.prompt_tokens));
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<int32_t>(2 + (i * 7919) % (config.vocab_size - 2));
  dsv4::ForwardBatch prefill;
  prefill.chunks.push_back({seq.get(), prompt, false});
  dsv4::Logits logits = rt.model().forward(prefill);

  int32_t token = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < options.decode_tokens; ++i) {
    token = static_cast<int32_t>(std::max_element(logits.row(0), logits.row(0) + logits.vocab) -
                                 logits.row(0));
    dsv4::ForwardBatch step;
    step.chunks.push_back({seq.get(), std::span<const int32_t>(&token, 1), false});
    logits = rt.model().forward(step);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  DecodeBenchResult r;
  r.parameters = dsv4::parameter_count(*weights);
  r.weight_bytes_per_token = dsv4::decode_weight_bytes(config, options.bf16_weights ? 2 : 4);
  r.tokens_per_second = static_cast<double>(options.decode_tokens) / seconds;
  r.weight_gbps = r.tokens_per_second * static_cast<double>(r.weight_bytes_per_token) / 1e9;
  r.copy_gbps = measure_copy_bandwidth(threads);
  r.threads = threads;
  return r;
}

std::string format_decode_table(const DecodeBenchOptions& o, const DecodeBenchResult& r) {
  std::string s;
  s += "| preset | params | weight MB/token | decode tok/s | weight GB/s | copy GB/s | % of copy "
       "|\n";
  s += "|---|---|---|---|---|---|---|\n";
  s += fmt::format("| {}{} | {:.1f}M | {:.1f} | {:.1f} | {:.2f} | {:.2f} | {:.0f}% |\n", o.preset,
                   o.bf16_weights ? " (bf16 weights)" : "", static_cast<double>(r.parameters) / 1e6,
                   static_cast<double>(r.weight_bytes_per_token) / 1e6, r.tokens_per_second,
                   r.weight_gbps, r.copy_gbps, 100.0 * r.weight_gbps / r.copy_gbps);
  return s;
}

}  // namespace tessera::bench
