// Tensor-parallel split of DeepSeek-V4 weights (ARCHITECTURE.md "Executor", docs/engine.md):
//   sharded:    query heads (wq_b rows, attn_sink), the grouped wo_a (whole groups), wo_b (the
//               matching input columns), every expert and the shared expert along the
//               intermediate dimension (w1/w3 rows, w2 columns), the vocabulary head (rows);
//   replicated: embedding, wq_a, q_norm, wkv, kv_norm, compressors, indexer, router (gate, bias,
//               tid2eid), mHC weights, norms.
// The model all-reduces after wo_b and after the MoE, and all-gathers the vocabulary shards.
#pragma once

#include "model/dsv4_weights.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera {

// Throws tessera::Error naming the dimension that `ranks` does not divide.
void check_tensor_parallel(const dsv4::ModelConfig& config, int ranks);

// Throws tessera::Error unless executor.reduction_parts = `parts` works with `ranks`: 1 (off: one
// product per rank), or a power of two, a multiple of ranks, dividing each rank's wo_b input and
// expert widths (naming which).
void check_reduction_parts(const dsv4::ModelConfig& config, int ranks, int parts);

// Rank `rank`'s share of `full` (a copy; replicated tensors are copied whole).
dsv4::ModelWeights shard_model_weights(const dsv4::ModelConfig& config,
                                       const dsv4::ModelWeights& full, int rank, int ranks);

}  // namespace tessera
