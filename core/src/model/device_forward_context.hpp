// What the device forward's blocks share during one step (model/device_model.hpp): the device,
// its stream and ops, the step's scratch buffers, the cache (format, pools in the device's memory)
// and the attention plugin, the step's positions on both sides and its compressor plans.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "device/device.hpp"
#include "device/device_ops.hpp"
#include "device/host_staging.hpp"
#include "device/scratch.hpp"
#include "device/step_timeline.hpp"
#include "kv/kv_format.hpp"
#include "kv/sequence_kv.hpp"
#include "model/device_compressors.hpp"
#include "model/device_weight_views.hpp"
#include "model/forward_batch.hpp"
#include "util/plugin_instance.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

// The kv stores of a layer, as kv_failures counts them.
enum KvStore : int64_t { kWindowKv = 0, kCompressedKv = 1, kIndexerKeys = 2, kKvStores = 3 };

struct DeviceForwardContext {
  const ModelConfig& config;
  device::Device& device;
  const device::Stream& stream;
  const device::DeviceOps& ops;
  device::Scratch& scratch;  // buffers sized by the step's tokens (graphs may hold them)
  // Buffers sized by the context or the step's windows (attention workspace, compressor plans):
  // read by eager work only, so their growth leaves the graphs valid.
  device::Scratch& context_scratch;
  device::HostStaging& staging;  // the step's uploads: put here, reset after the step
  const KvFormat& kv_format;
  KvPools& pools;  // page bytes in the device's memory
  const PluginInstance& attention;
  const ForwardBatch& batch;
  const std::vector<int64_t>& positions;  // [T] host
  const int32_t* positions_dev;           // [rows] the device's copy
  const int32_t* ids_dev;                 // [rows] token ids on the device
  // Rows of the graphable work (the attention block's inputs and output, the MoE): T, or a
  // decode step's graph bucket B >= T (model/piecewise_graphs.hpp), whose rows past T are
  // padding (token id 0 at position 0). The eager work (kv stores, compressors, attention
  // plugin, head) takes the T rows of `positions`.
  int64_t rows;
  // The step runs from graphs and its compressors with it (a kv format with store_device_slots):
  // everything in the pieces has a fixed size (rows) and reads the step from device memory.
  bool graphed;
  // [layers, rows] the window kv's slots in the device's memory (-1 for padding rows) when the kv
  // format stores from them (ABI 1.6): attention_inputs stores the window kv (in a graph piece).
  // Null: attention_cache_and_run stores it from host slots.
  const int64_t* window_slots;
  device::StepTimeline* timeline;  // null unless a benchmark asks where the time goes
  int64_t* routing_failures;       // [layers] device: each MoE's lowest failed token, or T
  // [layers, kKvStores] device: each kv store's lowest row holding a non-finite value (left
  // unwritten by the format), or more than any row; given to formats with store_async.
  int64_t* kv_failures;
  const DeviceCompressors* compressors;  // the step's compressor plans

  // Closes the interval since the previous mark under `label` when a timeline is attached.
  void mark(const char* label) const {
    if (timeline != nullptr) {
      timeline->mark(label);
    }
  }
};

// A layer's attention buffers in the step's scratch (device memory), of ctx.rows = R rows:
// q_lat [R, q_lora_rank], kv [R, Dh], q and o [R, H, Dh]; on CSA layers index_q [R, IH, ID] and
// index_w [R, IH].
struct AttentionBuffers {
  float* q_lat = nullptr;
  float* kv = nullptr;
  float* q = nullptr;
  float* o = nullptr;
  float* index_q = nullptr;
  float* index_w = nullptr;
};
AttentionBuffers attention_buffers(const DeviceForwardContext& ctx, int64_t layer,
                                   const DeviceAttentionWeights& w);
// The attention block (device_attention.cpp) in its three parts. x: [rows, D] normalised block
// input; out: [rows, D]; both device memory. inv_freq: the layer's RoPE frequencies on the device.
// The inputs: projections, norms, RoPE, the indexer's queries and weights, the compressors'
// projections, and the window kv stored when ctx.window_slots is given (graphable).
void attention_inputs(const DeviceForwardContext& ctx, int64_t layer,
                      const DeviceAttentionWeights& w, const float* inv_freq, const float* x,
                      const AttentionBuffers& b);
// The window kv stored (unless attention_inputs did), the compressors' windows, the attention
// plugin's plan and run into b.o (eager; the padding rows of b.o are zeroed).
void attention_cache_and_run(const DeviceForwardContext& ctx, int64_t layer,
                             const DeviceAttentionWeights& w, const float* inv_freq,
                             const AttentionBuffers& b, ForwardStats& stats);
// Inverse RoPE and the grouped output projection into out (graphable).
void attention_output(const DeviceForwardContext& ctx, const DeviceAttentionWeights& w,
                      const float* inv_freq, const AttentionBuffers& b, float* out);

// x: [rows, D] (post ffn_norm) -> out [rows, D], device memory.
void device_moe_forward(const DeviceForwardContext& ctx, int64_t layer, const DeviceMoeWeights& w,
                        const float* x, float* out);
// After the step: throws tessera::Error naming the first layer and store whose rows held a
// non-finite value (kv_failures as copied to the host), and the token of a window row.
void check_kv_stores(const ModelConfig& config, const KvFormat& format,
                     std::span<const int64_t> failures, const ForwardBatch& batch);
// After the step: throws tessera::Error naming the first layer whose routing failed (a hash
// layer's token id outside tid2eid, or an expert outside [0, E)); failures: routing_failures as
// copied to the host.
void check_routing(const ModelConfig& config, std::span<const int64_t> failures,
                   const ForwardBatch& batch);

}  // namespace tessera::dsv4
