// A sizing model of one DeepSeek-V4 decode step under tensor parallelism: from a checkpoint's (or
// a preset's) tensor shapes and storage formats, the bytes each rank reads, the FLOPs it runs,
// the collectives it joins, and from hardware figures (bench/hardware_figures.hpp) a predicted
// time per output token.
//
// Placement (../shared/docs/GPU.md): embedding, mHC, norms, wq_a, wkv, compressors, indexer and
// router replicated; wq_b and sinks by heads, wo_a by whole output groups, wo_b by rows, the
// shared expert as a dense MLP and the head by vocabulary rows: 1/N each; routed experts split
// by TP (each rank 1/N of every expert) or EP (E/N whole experts per rank), the same bytes on
// average. Every rank reads the whole KV cache of every sequence (one KV head: MQA).
// Routed experts at batch B touch E * (1 - (1 - k/E)^B) distinct experts per layer on average
// (uniform routing). Step time = max(bytes / bandwidth, FLOPs / throughput) + collectives.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/hardware_figures.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::bench {

enum class TensorRole {
  Replicated,  // every rank reads all of it
  Sharded,     // 1/N per rank (wq_b, sinks, wo_a, wo_b, shared expert)
  Head,        // 1/N per rank by vocabulary rows; logits all-gathered
  RoutedExpert,
  RowsRead,  // embedding, tid2eid: one row per token
};

struct TensorFootprint {
  std::string name;
  TensorRole role = TensorRole::Replicated;
  uint64_t bytes = 0;
  uint64_t params = 0;  // weights (0 for a scale tensor)
  int64_t rows = 1;     // RowsRead: bytes / rows per token
};

struct ModelFootprint {
  dsv4::ModelConfig config;
  std::vector<TensorFootprint> tensors;
  std::string source;        // "preset flash (official formats)", a checkpoint path, ...
  bool fp8_compute = false;  // FP8 / FP4 weights: GEMMs at the FP8 rate, else the BF16 rate
};

enum class WeightFormat { Official, F32, Bf16 };  // F32 / Bf16: linear weights so, others fp32
enum class ExpertSplit { TensorParallel, ExpertParallel };

[[nodiscard]] TensorRole role_of(const std::string& official_name);
// The tensors of `config` stored as `format`.
[[nodiscard]] ModelFootprint footprint_of_config(const dsv4::ModelConfig& config,
                                                 WeightFormat format, std::string source);
// config.json + the headers of every *.safetensors in `dir` (official names), bytes as stored.
[[nodiscard]] ModelFootprint footprint_of_checkpoint(const std::filesystem::path& dir);

struct SizingOptions {
  int ranks = 8;
  ExpertSplit experts = ExpertSplit::TensorParallel;
  int64_t context = 4096;          // tokens already in every sequence's cache
  double kv_entry_bytes = 584;     // FP8 entry: 448 e4m3 + 64 bf16 rope + 8 scale (DSV4.md §4)
  double index_entry_bytes = 132;  // indexer key: 128 e4m3 + fp32 scale
  double activation_bytes = 2;     // bf16 all-reduce payload per value
  double logit_bytes = 4;          // fp32 logits all-gathered
};

struct StepCost {  // one decode step at `batch` sequences, per rank
  int64_t batch = 1;
  double replicated_bytes = 0, sharded_bytes = 0, head_bytes = 0, expert_bytes = 0, rows_bytes = 0,
         kv_bytes = 0, index_bytes = 0;
  double experts_touched_per_layer = 0;  // whole model (all ranks)
  double flops = 0;
  int collectives = 0;
  double all_reduce_bytes = 0;  // each of the 2 per layer
  double all_gather_bytes = 0;  // the logits, whole
  double memory_s = 0, compute_s = 0, collective_s = 0;
  [[nodiscard]] double weight_bytes() const {
    return replicated_bytes + sharded_bytes + head_bytes + expert_bytes + rows_bytes;
  }
  [[nodiscard]] double bytes() const { return weight_bytes() + kv_bytes + index_bytes; }
  [[nodiscard]] double step_s() const { return std::max(memory_s, compute_s) + collective_s; }
  [[nodiscard]] double tokens_per_s() const { return static_cast<double>(batch) / step_s(); }
};

// E * (1 - (1 - k/E)^B): k at B = 1, tends to E.
[[nodiscard]] double expected_distinct_experts(int64_t experts, int64_t per_token, int64_t batch);
// KV-cache and indexer-key bytes one sequence's decode step reads at `context` (DSV4.md §4):
// window min(ctx, window) entries per layer, CSA min(top-k, ctx/4) entries + ctx/4 indexer keys,
// HCA ctx/128 entries.
[[nodiscard]] double kv_bytes_per_sequence(const dsv4::ModelConfig& c, const SizingOptions& o);
[[nodiscard]] double index_bytes_per_sequence(const dsv4::ModelConfig& c, const SizingOptions& o);

// What a rank keeps resident: replicated tensors whole, the split ones 1/N.
[[nodiscard]] double resident_weight_bytes(const ModelFootprint& model, const SizingOptions& o);
// What one sequence at `context` tokens keeps on every rank (one KV head): the window, the
// compressed entries and indexer keys (DSV4.md §4: ~3,850 B per token for Flash + the window),
// and separately the compressors' fp32 state (c*m rows of kv and gate, c*d wide, per layer: a
// sequence's CompressorState on the host, its ring slot on a device, kv/compressor_rings.hpp).
[[nodiscard]] double kv_bytes_stored_per_sequence(const dsv4::ModelConfig& c,
                                                  const SizingOptions& o);
[[nodiscard]] double compressor_state_bytes_per_sequence(const dsv4::ModelConfig& c);

[[nodiscard]] StepCost decode_step_cost(const ModelFootprint& model, const SizingOptions& options,
                                        const HardwareFigures& hardware, int64_t batch);

}  // namespace tessera::bench
