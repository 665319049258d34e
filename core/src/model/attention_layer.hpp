// One DeepSeek-V4 attention block for a batch (DSV4.md §2.3, TRANSFORMERS_NOTES.md §D-F):
// projections, RoPE, kv into the window cache, compressor entries (and indexer keys) into the
// compressed cache, then the attention plugin (indexer + sparse attention with sink), inverse
// RoPE and the grouped low-rank output projection. The model reaches the cache only through the
// kv-cache format plugin and attention only through the attention plugin.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_format.hpp"
#include "kv/sequence_kv.hpp"
#include "model/dsv4_weights.hpp"
#include "model/forward_batch.hpp"
#include "ops/rope.hpp"
#include "util/plugin_instance.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

struct AttentionContext {
  const ModelConfig& config;
  const KvFormat& kv_format;
  KvPools& pools;
  const PluginInstance& backend;
  std::vector<uint8_t>& workspace;  // grown on demand, reused across layers and steps
  // wo_b's sum as this many products added by ops::tree_sum (executor.reduction_parts / ranks;
  // 1: one product). Must divide its input width.
  int reduction_parts = 1;
};

// x: [T, D] normalised block input; positions [T]; out: [T, D]. With sharded weights (a
// tensor-parallel rank) out is this rank's partial sum, to be all-reduced.
void attention_forward(const AttentionContext& ctx, int64_t layer, const Attention& w,
                       const ops::RopeTable& rope, const ForwardBatch& batch,
                       const std::vector<int64_t>& positions, const float* x, float* out,
                       ForwardStats& stats);

}  // namespace tessera::dsv4
