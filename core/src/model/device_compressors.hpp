// The compressors of the device forward, their state on the device (kv/compressor_rings.hpp; the
// algorithm: kv/compressor_state.hpp). Before a step the host works out from the positions alone
// which windows each sequence closes, where each of their rows is (the step's projections or the
// sequence's ring) and which rows the rings keep, and sends that plan to the device with one copy
// per compression ratio. Each layer's compressor then runs without a host synchronisation:
// projections, ape, pooling, norm, RoPE at the window start, the kv format's store, the rings
// updated. A prefix snapshot's compressor state (the previous window's rows, m = 4) is gathered
// on the device and copied to the host once, at the step's end (a copy to pageable host memory
// waits for the stream); a sequence restored from a snapshot loads it into its ring at its first
// device step. One rank's thread.
#pragma once

#include <cstdint>
#include <vector>

#include "device/device.hpp"
#include "device/device_ops.hpp"
#include "kv/sequence_kv.hpp"
#include "model/device_weight_views.hpp"
#include "model/forward_batch.hpp"

namespace tessera::dsv4 {

struct DeviceForwardContext;

class DeviceCompressors {
 public:
  // Whether the step's compressors can run from a graph: no sequence records a snapshot in the
  // step or resumes from one (those copy to and from the host).
  static bool steady(const ForwardBatch& batch);
  // Before the step's compressors: takes each sequence's ring slot, plans every compression
  // ratio of the model, and copies the plans to the device. A step that runs from graphs
  // (ctx.graphed, a steady one) gets plans of a fixed size (ctx.rows windows and kept rows,
  // padding marked -1) in the step's scratch, and its entries' slots taken now for every layer
  // and uploaded (a kv format with store_device_slots), so that run() does nothing on the host.
  void plan(const DeviceForwardContext& ctx);
  // The layer's main compressor (indexer false) or its indexer's projections of the step's rows
  // x [rows, D] (device memory), ape added: work sized by the step's rows alone, in the layer's
  // graph piece (ctx.rows, a bucket's padding rows included).
  void project(const DeviceForwardContext& ctx, int64_t layer, const DeviceCompressor& w,
               bool indexer, const float* x) const;
  // The rest, after project(): the windows the step closes pooled, normalised, rotated (inv_freq:
  // the layer's RoPE frequencies on the device) and stored by the kv format, the snapshots'
  // rows, the rings updated (eager: sized by the windows closed). The main compressor runs
  // first: its entries take the indexer's slots too (SequenceKv::append_compressed).
  void run(const DeviceForwardContext& ctx, int64_t layer, const DeviceCompressor& w, bool indexer,
           const float* inv_freq) const;
  // After the last compressor: the snapshots' states to the host (one copy).
  void download(const DeviceForwardContext& ctx);
  // After the step's synchronisation: the snapshots' compressor states handed to their sequences
  // (before SequenceKv::advance builds the snapshots); every sequence's ring holds its last
  // windows.
  void finish(const ModelConfig& config, const ForwardBatch& batch);

 private:
  // A chunk's place in the step: its sequence, first position and row, ring slot.
  struct Chunk {
    SequenceKv* kv = nullptr;
    int64_t first_position = 0, first_row = 0, tokens = 0;
    int32_t slot = 0;
  };
  // A snapshot at `length` inside the step's tokens of chunk `chunk`.
  struct SnapshotAt {
    size_t chunk = 0;
    int64_t length = 0;
  };
  // A sequence restored from a snapshot, at its first device step: the previous window's rows of
  // each overlapping compressor, [layers] (empty where the layer has none).
  struct Restore {
    size_t chunk = 0;
    std::vector<CompressorSnapshot> main, indexer;
  };
  // The step's work of every compressor with ratio m.
  struct RatioPlan {
    int64_t m = 0;
    std::vector<int64_t> host;       // the index arrays below, packed, as uploaded
    std::vector<int32_t> rope_host;  // each window's start k * m
    std::vector<size_t> owner;       // [windows] the chunk of each closed window
    device::CompressorWindows windows;
    const int32_t* rope_positions = nullptr;  // [windows]
    const int64_t* ape_rows = nullptr;        // [rows]: p % m (0 for padding rows)
    int64_t keep = 0;                         // rows kept in the rings
    const int64_t* keep_src = nullptr;        // [keep] the step's rows
    const int64_t* keep_dst = nullptr;        // [keep] ring rows
  };

  RatioPlan plan_ratio(const DeviceForwardContext& ctx, int64_t m) const;
  // ctx.graphed: every layer's entry slots of the step, [layers, 2 (main, indexer), rows], -1
  // for padding, uploaded to the step's scratch.
  void plan_slots(const DeviceForwardContext& ctx);
  const RatioPlan& plan_of(int64_t m) const;
  // Restored sequences' previous windows into their rings, before the step reads them.
  void load_restored(const DeviceForwardContext& ctx, int64_t layer, bool indexer,
                     const CompressorRings::Ring& ring) const;
  // Staging offsets of the step's snapshots' compressor states.
  void plan_snapshots(const DeviceForwardContext& ctx);
  // The snapshots' compressor states of this layer into the staging buffer.
  void record_snapshots(const DeviceForwardContext& ctx, int64_t layer, bool indexer,
                        const CompressorRings::Ring& ring, const float* kv,
                        const float* gate) const;

  std::vector<Chunk> chunks_;
  std::vector<SnapshotAt> snapshots_;
  std::vector<Restore> restores_;
  std::vector<RatioPlan> plans_;
  bool fixed_ = false;                  // this step's plans are of the graphs' fixed size
  const int64_t* slots_dev_ = nullptr;  // fixed_: [layers, 2, rows] entry slots
  std::vector<float> ones_;             // the ape add's weights, as many as the largest step's rows
  const float* ones_dev_ = nullptr;     // their device copy, uploaded when it grows
  // The snapshots' previous windows (m = 4): [snapshot][layer][main, indexer] offsets (-1: none)
  // into the staging buffer on the device, and its host copy (page-locked, grown when a step
  // needs more).
  std::vector<int64_t> snapshot_offsets_;
  float* snapshot_rows_ = nullptr;
  size_t snapshot_floats_ = 0;
  device::HostBuffer snapshot_host_;
  size_t snapshot_capacity_ = 0;  // floats
};

}  // namespace tessera::dsv4
