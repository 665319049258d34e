#include "bench/sizing_table.hpp"

#include <fmt/format.h>

#include <cmath>

namespace tessera::bench {

std::string format_sizing_table(const ModelFootprint& model, const SizingOptions& o,
                                const HardwareFigures& hw, const std::vector<int64_t>& batches) {
  const auto& c = model.config;
  std::string s = fmt::format(
      "model: {} ({} layers, D {}, {} routed experts top-{}, vocab {})\n"
      "placement: {} rank(s), routed experts {}, context {} tokens (KV {} B/entry, indexer {} "
      "B/key)\n"
      "hardware: {}: {:.0f} GB/s used ({:.0f} nominal), {:.4g} / {:.4g} TFLOP/s bf16 / fp8 dense, "
      "link {:.0f} GB/s per direction, {:.0f} us per collective\n"
      "sources: {}\n",
      model.source, c.num_layers, c.hidden_size, c.n_routed_experts, c.experts_per_token,
      c.vocab_size, o.ranks, o.experts == ExpertSplit::TensorParallel ? "TP" : "EP", o.context,
      o.kv_entry_bytes, o.index_entry_bytes, hw.name, hw.memory_gbps, hw.nominal_memory_gbps,
      hw.dense_bf16_tflops, hw.dense_fp8_tflops, hw.link_gbps, hw.collective_latency_us,
      hw.sources);
  if (o.ranks > 1) {
    const StepCost one = decode_step_cost(model, o, hw, 1);
    s += fmt::format(
        "collectives per step: {} = 2 all-reduces per layer of B x {} B + 1 all-gather of B x {} "
        "B logits\n",
        one.collectives, one.all_reduce_bytes, one.all_gather_bytes);
  }
  const double weights = resident_weight_bytes(model, o);
  const double per_sequence =
      kv_bytes_stored_per_sequence(c, o) + compressor_state_bytes_per_sequence(c);
  s += fmt::format(
      "memory per rank: {:.2f} GB of weights resident; each sequence at {} tokens holds {:.1f} MB "
      "(KV + indexer keys {:.1f} MB, compressor state {:.1f} MB) on every rank",
      weights / 1e9, o.context, per_sequence / 1e6, kv_bytes_stored_per_sequence(c, o) / 1e6,
      compressor_state_bytes_per_sequence(c) / 1e6);
  if (hw.memory_gb > 0) {
    const double room = hw.memory_gb * 1e9 - weights;
    s += fmt::format(
        "; {:.0f} GB per device leaves room for {:.0f} such sequences (before activations and "
        "workspaces)",
        hw.memory_gb, room > 0 ? std::floor(room / per_sequence) : 0.0);
  }
  s += "\n\nper rank, one decode step (predicted):\n\n";
  s += "| batch | weights MB | of which experts MB | experts touched / layer | KV + indexer MB | "
       "GFLOP | memory ms | compute ms | collectives ms | ms per output token | tokens/s |\n";
  s += "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const int64_t b : batches) {
    const StepCost r = decode_step_cost(model, o, hw, b);
    s += fmt::format(
        "| {} | {:.1f} | {:.1f} | {:.1f} | {:.2f} | {:.1f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | "
        "{:.0f} |\n",
        b, r.weight_bytes() / 1e6, r.expert_bytes / 1e6, r.experts_touched_per_layer,
        (r.kv_bytes + r.index_bytes) / 1e6, r.flops / 1e9, r.memory_s * 1e3, r.compute_s * 1e3,
        r.collective_s * 1e3, r.step_s() * 1e3, r.tokens_per_s());
  }
  return s;
}

}  // namespace tessera::bench
