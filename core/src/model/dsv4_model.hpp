// The DeepSeek-V4 forward pass on CPU (fp32 everywhere, the reference every faster path is
// compared with). Embedding -> hc_mult streams -> blocks (mHC + attention, mHC + MoE) -> hc_head
// -> final norm -> logits. Attention and the cache go through plugins (AttentionContext).
//
// Tensor parallelism (docs/engine.md): given a rank's shard of the weights
// (executor/weight_sharding.hpp) and a Communicator, the model all-reduces the attention output
// (after wo_b) and the MoE output, and all-gathers the vocabulary shards of the logits. Every rank
// computes the replicated parts (kv, compressors, indexer, router, mHC) identically and holds the
// whole cache of its sequences. Without a communicator it is the single-rank model.
#pragma once

#include <cstdint>
#include <vector>

#include "device/communicator.hpp"
#include "kv/kv_format.hpp"
#include "kv/sequence_kv.hpp"
#include "model/dsv4_weights.hpp"
#include "model/forward_batch.hpp"
#include "model/forward_model.hpp"
#include "ops/logits.hpp"
#include "ops/rope.hpp"
#include "util/plugin_instance.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

class Model final : public ForwardModel {
 public:
  // `comm` (may be null: one rank) must outlive the model; weights are this rank's shard.
  Model(const ModelConfig& config, const ModelWeights& weights, const KvFormat& kv_format,
        const PluginInstance& attention, KvPools& pools, Communicator* comm = nullptr);

  // Runs one step; appends every chunk's tokens to its SequenceKv. Logits for the last token of
  // each chunk, or all its tokens when chunk.all_logits.
  Logits forward(const ForwardBatch& batch, ForwardStats* stats = nullptr) override;

  const ModelConfig& config() const { return config_; }
  // model.dtype = "bf16": forward() multiplies every weight held in bf16 by bf16-rounded inputs
  // (ops::Bf16ActivationScope); the caller checked ops::gemm_nt_bf16_available().
  void set_bf16_activations(bool on) { bf16_activations_ = on; }
  bool bf16_activations() const { return bf16_activations_; }
  // executor.reduction_parts / ranks: wo_b's and the experts' w2 sums run as this many products
  // added by ops::tree_sum (1: one product each). The caller checked it divides their widths.
  void set_reduction_parts(int parts) { reduction_parts_ = parts; }

 private:
  const ModelConfig& config_;
  const ModelWeights& weights_;
  const KvFormat& kv_format_;
  const PluginInstance& attention_;
  KvPools& pools_;
  Communicator* comm_ = nullptr;
  bool bf16_activations_ = false;
  int reduction_parts_ = 1;
  std::vector<ops::RopeTable> rope_;  // per layer
  std::vector<uint8_t> workspace_;
};

}  // namespace tessera::dsv4
