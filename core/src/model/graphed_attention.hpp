// The attention plugin inside the decode graphs (model/piecewise_graphs.hpp), for a plugin whose
// capabilities say "cuda_graph": true and whose table has the shaped run of ABI 1.7 (plan_shape,
// run_shaped; plugin_abi.h). A graphed step's attention is laid out at a fixed shape: the
// bucket's rows, and slots and visible entries of every layer's batch rounded up to powers of two
// (kept per bucket: it only grows). Before the step's pieces, describe() writes each layer's work
// description into that layer's part of the bucket's page-locked host buffer (host work: a
// replayed piece runs none); each layer's input piece then ends with launch(): the plugin's copy
// of that description and its kernels, captured and replayed with the piece. A bucket whose shape
// grows gets a new buffer, and PiecewiseGraphs makes its graphs again (layout key). The
// workspace is in the step's scratch (fixed addresses while the graphs hold). One rank's thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "device/device.hpp"
#include "model/attention_batch.hpp"
#include "model/device_forward_context.hpp"
#include "tessera/plugin_abi.h"

namespace tessera::dsv4 {

class GraphedAttention {
 public:
  // Whether the plugin can run inside graphs: "cuda_graph": true and the shaped run.
  static bool capable(const PluginInstance& attention);

  // For a graphed step on ctx.rows rows: the layers' batches and work descriptions (DESCRIBE),
  // the bucket's shape grown to hold them; each layer's query heads on this rank and attn_sink
  // from its weights. Adds the indexer work to stats.
  void describe(const DeviceForwardContext& ctx, std::span<const DeviceLayerWeights> layers,
                ForwardStats& stats);
  // The bucket's layout: changes when its shape grows (PiecewiseGraphs::require_layout).
  [[nodiscard]] uint64_t layout_key() const { return key_; }
  // Layer's plugin run (LAUNCH) into b.o: every ctx.rows row written, the padding rows zero.
  void launch(const DeviceForwardContext& ctx, int64_t layer, const AttentionBuffers& b) const;

 private:
  struct Bucket {
    ts_attention_shape shape{};
    device::HostBuffer host;      // the layers' work descriptions, page-locked
    std::vector<size_t> offsets;  // [layers] each layer's part of host
    std::vector<size_t> sizes;    // [layers] its bytes
    size_t workspace_bytes = 0;   // the largest layer's device workspace
    uint64_t key = 0;
  };
  // The bucket's buffers for `shape` (a new host buffer and key).
  void reshape(const DeviceForwardContext& ctx, Bucket& bucket, const ts_attention_shape& shape);

  std::map<int64_t, Bucket> buckets_;                     // by rows
  std::vector<std::unique_ptr<AttentionBatch>> batches_;  // the step's, per layer
  Bucket* step_ = nullptr;                                // the step's bucket
  void* workspace_ = nullptr;
  uint64_t next_key_ = 1;
  uint64_t key_ = 0;
};

}  // namespace tessera::dsv4
