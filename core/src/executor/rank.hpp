// One tensor-parallel rank: its model (a weight shard), its kv-cache format and attention plugin
// instances, its page pools, the SequenceKv of every live sequence and the prefix snapshots. Every
// rank holds the whole latent cache of its sequences (the kv head is replicated).
// Thread-safety: used only by its rank's thread (rank 0: the engine loop; docs/engine.md).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "device/communicator.hpp"
#include "executor/step_plan.hpp"
#include "kv/kv_format.hpp"
#include "kv/prefix_snapshot.hpp"
#include "kv/sequence_kv.hpp"
#include "model/dsv4_model.hpp"
#include "model/forward_model.hpp"

namespace tessera {

class Rank {
 public:
  // All references must outlive the rank; `comm` may be null for a single rank.
  Rank(const dsv4::ModelConfig& config, const dsv4::ModelWeights& weights,
       const KvFormat& kv_format, const PluginInstance& attention, KvPools& pools,
       Communicator* comm);
  // A rank that runs `model` (not owned; the runtime's device forward), its pages in `pools`.
  Rank(const dsv4::ModelConfig& config, dsv4::ForwardModel& model, KvPools& pools);

  void apply(const CacheOp& op);
  // Runs the chunks (their sequences must exist), stores the snapshots they ask for.
  dsv4::Logits forward(const std::vector<PlannedChunk>& chunks);

  const SequenceKv& sequence(uint64_t id) const;
  bool has_sequence(uint64_t id) const { return sequences_.count(id) != 0; }
  bool has_snapshot(uint64_t id) const { return snapshots_.count(id) != 0; }
  size_t sequences() const { return sequences_.size(); }
  size_t snapshots() const { return snapshots_.size(); }
  // Main-pool pages referenced by prefix snapshots only: the prefix cache holds them, no live
  // sequence does, and evicting the snapshots would free them (reclaimable, not in use).
  int64_t main_pages_held_by_snapshots_only() const;
  const KvPools& pools() const { return pools_; }
  // The host forward's options (no effect on a device forward).
  void set_bf16_activations(bool on) {
    if (host_model_) {
      host_model_->set_bf16_activations(on);
    }
  }
  void set_reduction_parts(int parts) {
    if (host_model_) {
      host_model_->set_reduction_parts(parts);
    }
  }

 private:
  const dsv4::ModelConfig& config_;
  KvPools& pools_;
  std::unique_ptr<dsv4::Model> host_model_;  // the host forward on its shard, when it owns one
  dsv4::ForwardModel* model_;                // host_model_, or the device forward it was given
  std::unordered_map<uint64_t, std::unique_ptr<SequenceKv>> sequences_;
  // Freed sequences' objects, reset, for the next kCreate: building one (a page list and two
  // compressor windows per layer) and destroying it took ~7k and ~6k cycles on the 50m preset.
  // Requests of one length admitted together also finish together, so a step's turnover can be
  // a whole batch: the objects kept are bounded by their compressor buffers (~0.5 MB each on the
  // 50m preset, so 128 of them; ~12 MB on DeepSeek-V4-Flash, 5).
  static constexpr int64_t kSpareBytes = int64_t{64} << 20;
  std::vector<std::unique_ptr<SequenceKv>> spare_;
  std::unordered_map<uint64_t, PrefixSnapshot> snapshots_;
};

}  // namespace tessera
