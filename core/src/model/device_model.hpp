// The DeepSeek-V4 forward on a device of the device layer (docs/cuda.md): the same steps as the
// host forward (model/dsv4_model.hpp) in the same order, each an op of DeviceOps on the device's
// memory — weights as the checkpoint stores them (device_weight_views.hpp), cache pages in the
// device's memory, attention and the kv format through their plugins on the device. Works on every
// backend: the cpu one (host memory, the oracle's ops), cuda and emulated. Single rank.
//
// Decode steps replay CUDA graphs of the work between plugin calls (model/piecewise_graphs.hpp).
// A step synchronises the stream once, at its end (a kv format without store_async waits in
// each store: docs/cuda.md). Its uploads (ids, positions, plans) come from a page-locked arena
// (device/host_staging.hpp); logits come back to the host (page-locked memory of the device)
// with their row scans (a scan-only chunk's row without its values: device_head.cpp), with the
// MoE's routing failures and the prefix snapshots' compressor states. The host plans the step
// before it from positions and cache bookkeeping alone (page slots, the compressors' windows:
// model/device_compressors.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "device/device.hpp"
#include "device/device_communicator.hpp"
#include "device/host_block_pool.hpp"
#include "device/host_staging.hpp"
#include "device/scratch.hpp"
#include "kv/kv_format.hpp"
#include "kv/sequence_kv.hpp"
#include "model/device_compressors.hpp"
#include "model/device_weight_views.hpp"
#include "model/forward_batch.hpp"
#include "model/forward_model.hpp"
#include "model/graphed_attention.hpp"
#include "model/piecewise_graphs.hpp"
#include "ops/logits.hpp"
#include "util/plugin_instance.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

class DeviceModel final : public ForwardModel {
 public:
  // Every argument must outlive the model. `attention` and `kv_format` were created for `device`;
  // `pools` hold their page bytes in its memory.
  DeviceModel(const ModelConfig& config, const DeviceModelView& weights, device::Device& device,
              const device::Stream& stream, const KvFormat& kv_format,
              const PluginInstance& attention, KvPools& pools);

  // As Model::forward: one step, every chunk's tokens appended to its SequenceKv; logits (host
  // memory) for the last token of each chunk, or all of its tokens when chunk.all_logits.
  Logits forward(const ForwardBatch& batch, ForwardStats* stats = nullptr) override;

  // Tensor parallelism: the weights are one rank's share of `ranks` (cut by
  // model/device_shard.hpp); the block outputs are all-reduced after wo_b and after the MoE, and
  // the vocabulary shards all-gathered, through `comm`, of `ranks` ranks. forward() refuses to
  // run a share without its group; on ranks other than 0 it returns logits without values (the
  // executor reads rank 0's).
  void set_share(int ranks, device::DeviceCommunicator* comm) {
    ranks_ = ranks;
    comm_ = comm != nullptr && comm->size() > 1 ? comm : nullptr;
  }
  // executor.collective_dtype = "bf16": the two all-reduces per layer exchange bf16 values (each
  // rank's part rounded, the sum rounded: half the bytes); the vocabulary all-gather stays fp32.
  void set_bf16_collectives(bool on) { bf16_collectives_ = on; }

  // executor.cuda_graphs: decode steps replay CUDA graphs of the forward's pieces between
  // plugin calls (model/piecewise_graphs.hpp); on by default where the device has graphs.
  // executor.cuda_graph_max_batch: the largest batch-size bucket they take.
  void set_cuda_graphs(bool on, int64_t max_batch = PiecewiseGraphs::kDefaultMaxBatch) {
    graphs_.set_max_batch(max_batch);
    graphs_.set_enabled(on);
  }
  [[nodiscard]] const PiecewiseGraphs& graphs() const { return graphs_; }

  const ModelConfig& config() const { return config_; }
  // Device bytes of the step buffers (activations, workspaces) now held.
  [[nodiscard]] size_t scratch_bytes() const {
    return scratch_.total_bytes() + context_scratch_.total_bytes();
  }
  // The page-locked host blocks the steps' logits come back into.
  [[nodiscard]] const device::HostBlockPool& host_blocks() const { return host_blocks_; }

 private:
  // What the step's one copy to the host brings back (read after its synchronisation): the
  // failures [layers * (1 + kKvStores)], and under tensor parallelism, when no row wants values,
  // the shards' row scans [ranks, rows] (each over its Vr = shard_columns vocabulary columns).
  struct StepReturn {
    std::shared_ptr<std::byte> block;
    const int64_t* failures = nullptr;
    ops::RowScan* shard_scans = nullptr;
    int64_t rows = 0;
    int64_t shard_columns = 0;
  };
  // The vocabulary head over the rows that get logits and the copies back (device_head.cpp):
  // fills `logits` (their host memory is written once the step is synchronised).
  StepReturn vocabulary_head(const ForwardBatch& batch, const float* streams,
                             const int64_t* failures_dev, Logits& logits);
  // After the synchronisation: the shards' scans merged into logits.scans (when they came).
  void merge_shard_scans(const StepReturn& back, Logits& logits) const;
  // Where every layer's window kv of the step goes, when the kv format stores from slots in the
  // device's memory (ABI 1.6): the slots taken now, [layers, rows] (-1 for padding rows), uploaded
  // for the stores inside the graph pieces; else null (each layer stores from host slots).
  const int64_t* window_slots_of_step(const ForwardBatch& batch,
                                      const std::vector<int64_t>& positions, int64_t rows);
  // The all-reduce of a block's output [count] over the ranks' parts, in fp32 or bf16.
  void all_reduce_block(float* block_out, int64_t count);

  const ModelConfig& config_;
  const DeviceModelView& weights_;
  device::Device& device_;
  const device::Stream& stream_;
  const KvFormat& kv_format_;
  const PluginInstance& attention_;
  KvPools& pools_;
  int ranks_ = 1;
  device::DeviceCommunicator* comm_ = nullptr;
  bool bf16_collectives_ = false;
  device::Scratch scratch_;          // sized by the step's tokens: graphs hold its addresses
  device::Scratch context_scratch_;  // sized by context, windows and logits rows: eager work only
  PiecewiseGraphs graphs_;
  device::HostStaging staging_;                 // the steps' uploads come from here
  device::HostBlockPool host_blocks_;           // the steps' logits come back into these
  std::vector<device::DeviceBuffer> inv_freq_;  // per layer, the RoPE frequencies
  DeviceCompressors compressors_;
  // The attention plugin inside the decode graphs when it can be (GraphedAttention::capable).
  bool attention_graphable_ = false;
  GraphedAttention graphed_attention_;
};

}  // namespace tessera::dsv4
