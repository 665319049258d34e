#include "executor/rank.hpp"

#include "util/check.hpp"

namespace tessera {

Rank::Rank(const dsv4::ModelConfig& config, const dsv4::ModelWeights& weights,
           const KvFormat& kv_format, const PluginInstance& attention, KvPools& pools,
           Communicator* comm)
    : config_(config),
      pools_(pools),
      host_model_(
          std::make_unique<dsv4::Model>(config, weights, kv_format, attention, pools, comm)),
      model_(host_model_.get()) {}

Rank::Rank(const dsv4::ModelConfig& config, dsv4::ForwardModel& model, KvPools& pools)
    : config_(config), pools_(pools), model_(&model) {}

void Rank::apply(const CacheOp& op) {
  switch (op.kind) {
    case CacheOpKind::kCreate: {
      TS_CHECK(!has_sequence(op.sequence), "sequence {} created twice", op.sequence);
      std::unique_ptr<SequenceKv> kv;
      if (spare_.empty()) {
        kv = std::make_unique<SequenceKv>(config_, pools_);
      } else {
        kv = std::move(spare_.back());  // reset when it was freed
        spare_.pop_back();
      }
      sequences_.emplace(op.sequence, std::move(kv));
      return;
    }
    case CacheOpKind::kRestore: {
      TS_CHECK(!has_sequence(op.sequence), "sequence {} created twice", op.sequence);
      const auto it = snapshots_.find(op.snapshot);
      TS_CHECK(it != snapshots_.end(), "restore of sequence {} from unknown snapshot {}",
               op.sequence, op.snapshot);
      sequences_.emplace(op.sequence, std::make_unique<SequenceKv>(config_, pools_, it->second));
      return;
    }
    case CacheOpKind::kFree: {
      const auto it = sequences_.find(op.sequence);
      TS_CHECK(it != sequences_.end(), "free of unknown sequence {}", op.sequence);
      it->second->reset();  // its pages go back now, whether or not the object is kept
      // Every object of a rank holds buffers of the same size (one model config), or none (the
      // device forward keeps the compressors' state on the device).
      const auto kept = static_cast<int64_t>(spare_.size()) + 1;
      if (kept * it->second->compressor_bytes() <= kSpareBytes) {
        spare_.push_back(std::move(it->second));
      }
      sequences_.erase(it);
      return;
    }
    case CacheOpKind::kDropSnapshot:
      TS_CHECK(snapshots_.erase(op.snapshot) == 1, "drop of unknown snapshot {}", op.snapshot);
      return;
  }
  TS_CHECK(false, "unknown cache op {}", static_cast<int>(op.kind));
}

const SequenceKv& Rank::sequence(uint64_t id) const {
  const auto it = sequences_.find(id);
  TS_CHECK(it != sequences_.end(), "unknown sequence {}", id);
  return *it->second;
}

int64_t Rank::main_pages_held_by_snapshots_only() const {
  if (snapshots_.empty()) return 0;
  // A page is the cache's alone when every reference the pool counts comes from a snapshot.
  std::unordered_map<int32_t, int32_t> snapshot_refs;
  for (const auto& [id, snapshot] : snapshots_) {
    for (const PrefixSnapshot::Layer& layer : snapshot.layers()) {
      for (const int32_t p : layer.window_pages) ++snapshot_refs[p];
      for (const int32_t p : layer.compressed_pages) ++snapshot_refs[p];
    }
  }
  int64_t only = 0;
  for (const auto& [page, refs] : snapshot_refs) {
    if (pools_.main.refcount(page) == refs) ++only;
  }
  return only;
}

dsv4::Logits Rank::forward(const std::vector<PlannedChunk>& chunks) {
  dsv4::ForwardBatch batch;
  batch.chunks.reserve(chunks.size());
  for (const PlannedChunk& c : chunks) {
    const auto it = sequences_.find(c.sequence);
    TS_CHECK(it != sequences_.end(), "forward of unknown sequence {}", c.sequence);
    for (const SnapshotPoint& s : c.snapshots) it->second->request_snapshot(s.length);
    batch.chunks.push_back(
        {it->second.get(), std::span<const int32_t>(c.tokens), false, c.scan_only});
  }
  dsv4::Logits logits = model_->forward(batch);
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].snapshots.empty()) continue;
    std::vector<PrefixSnapshot> made = batch.chunks[i].kv->take_snapshots();
    TS_CHECK_EQ(made.size(), chunks[i].snapshots.size(), "prefix snapshots made");
    for (size_t k = 0; k < made.size(); ++k) {
      TS_CHECK_EQ(made[k].length(), chunks[i].snapshots[k].length, "prefix snapshot length");
      snapshots_.emplace(chunks[i].snapshots[k].snapshot, std::move(made[k]));
    }
  }
  return logits;
}

}  // namespace tessera
