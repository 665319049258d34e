#include "model/device_model.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "model/device_forward_context.hpp"
#include "ops/rope.hpp"
#include "tessera/plugin_abi.h"
#include "util/check.hpp"

namespace tessera::dsv4 {
namespace {

// The mHC coefficients of one site for the step's streams [T, n, D] (ops/hyper_mix.hpp), in the
// step's scratch: taken before the pieces that write and read them (PiecewiseGraphs: a replayed
// piece does not run its host code).
struct HcCoefficients {
  float* mix;
  float* pre;
  float* post;
  float* comb;
};

HcCoefficients hc_buffers(const DeviceForwardContext& ctx, const DeviceHyperConnection& site,
                          int64_t T) {
  const int64_t n = ctx.config.hc_mult;
  return {ctx.scratch.get<float>("hc.mix", T * site.rows), ctx.scratch.get<float>("hc.pre", T * n),
          ctx.scratch.get<float>("hc.post", T * n), ctx.scratch.get<float>("hc.comb", T * n * n)};
}

void hc_coefficients(const DeviceForwardContext& ctx, const DeviceHyperConnection& site,
                     const float* streams, int64_t T, const HcCoefficients& out) {
  const ModelConfig& c = ctx.config;
  const int64_t n = c.hc_mult, width = n * c.hidden_size;
  ctx.ops.hc_mix_logits(ctx.stream, streams, T, width, site.fn, site.rows,
                        static_cast<float>(c.rms_norm_eps), out.mix);
  const ops::HcSite coefficients{site.scale, site.base, n, c.hc_sinkhorn_iters,
                                 static_cast<float>(c.hc_eps)};
  ctx.ops.hc_coefficients(ctx.stream, coefficients, out.mix, T, out.pre, out.post, out.comb);
}

// The step's graphable work gathered into pieces (PiecewiseGraphs): add() queues work, flush()
// runs what was queued as one piece, before the eager work that follows.
class PieceQueue {
 public:
  explicit PieceQueue(PiecewiseGraphs& graphs) : graphs_(graphs) {}
  void add(std::function<void()> work) { queued_.push_back(std::move(work)); }
  void flush() {
    if (queued_.empty()) {
      return;
    }
    graphs_.run([this] {
      for (const std::function<void()>& work : queued_) {
        work();
      }
    });
    queued_.clear();
  }

 private:
  PiecewiseGraphs& graphs_;
  std::vector<std::function<void()>> queued_;
};

}  // namespace

DeviceModel::DeviceModel(const ModelConfig& config, const DeviceModelView& weights,
                         device::Device& device, const device::Stream& stream,
                         const KvFormat& kv_format, const PluginInstance& attention, KvPools& pools)
    : config_(config),
      weights_(weights),
      device_(device),
      stream_(stream),
      kv_format_(kv_format),
      attention_(attention),
      pools_(pools),
      scratch_(device, stream),
      context_scratch_(device, stream),
      graphs_(device, stream, scratch_),
      staging_(device),
      host_blocks_(device) {
  TS_CHECK_EQ(static_cast<int64_t>(weights.layers.size()), config.num_layers,
              "layers of the device weights");
  attention_graphable_ = GraphedAttention::capable(attention);
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const std::vector<float> f = ops::RopeTable::for_layer(config, l).inv_freq();
    device::DeviceBuffer& b = inv_freq_.emplace_back(device.allocate(f.size() * sizeof(float)));
    device.copy(b.data(), f.data(), f.size() * sizeof(float), device::CopyKind::kHostToDevice,
                stream);
  }
}

Logits DeviceModel::forward(const ForwardBatch& batch, ForwardStats* stats) {
  const int64_t T = batch.total_tokens();
  const int64_t D = config_.hidden_size, n = config_.hc_mult, V = config_.vocab_size;
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  const device::DeviceOps& ops = device_.ops();
  TS_CHECK(T > 0, "forward: empty batch");
  TS_CHECK(ranks_ == 1 || (comm_ != nullptr && comm_->size() == ranks_),
           "forward: this model holds one rank's share of the weights (tensor_parallel = {}): it "
           "runs in the executor's rank group (tessera serve), not alone",
           ranks_);
  std::vector<int64_t> positions;
  std::vector<int32_t> ids, positions32;
  for (const SequenceChunk& c : batch.chunks) {
    for (size_t i = 0; i < c.tokens.size(); ++i) {
      TS_CHECK(c.tokens[i] >= 0 && c.tokens[i] < V, "token id {} outside the vocabulary ({})",
               c.tokens[i], V);
      positions.push_back(c.kv->length() + static_cast<int64_t>(i));
      positions32.push_back(static_cast<int32_t>(positions.back()));
      ids.push_back(c.tokens[i]);
    }
  }
  ForwardStats local;
  ForwardStats& st = stats ? *stats : local;
  // A decode step (one token per sequence) runs its graphable work from graphs, on its bucket's
  // B >= T rows: the rows past T are padding, token id 0 at position 0. With a kv format that
  // stores from device slots the compressors run in the graphs too, unless a sequence records
  // or resumes from a snapshot in the step (then it runs eagerly).
  const bool decode = std::ranges::all_of(
      batch.chunks, [](const SequenceChunk& c) { return c.tokens.size() == 1 && !c.all_logits; });
  const bool device_slots = kv_format_.stores_from_device_slots();
  const int64_t B = graphs_.begin_step(T, decode && st.timeline == nullptr && !st.capture_streams &&
                                              (!device_slots || DeviceCompressors::steady(batch)));
  ids.resize(static_cast<size_t>(B), 0);
  positions32.resize(static_cast<size_t>(B), 0);
  auto* ids_dev = scratch_.get<int32_t>("step.ids", B);
  auto* positions_dev = scratch_.get<int32_t>("step.positions", B);
  if (staging_.in_use()) {  // a step that failed before its end: let its copies finish
    device_.synchronize(stream_);
    staging_.reset();
  }
  staging_.upload(ids_dev, std::span<const int32_t>(ids), stream_);
  staging_.upload(positions_dev, std::span<const int32_t>(positions32), stream_);

  // [layers] the MoEs' routing failures, then [layers, kKvStores] the kv stores' first
  // non-finite rows (set past any row: 0x7F bytes); one copy back after the step.
  const auto L = static_cast<size_t>(config_.num_layers);
  auto* routing_failures =
      scratch_.get<int64_t>("step.failures", static_cast<int64_t>(L * (1 + kKvStores)));
  int64_t* kv_failures = routing_failures + L;
  device_.fill(kv_failures, 0x7F, L * kKvStores * sizeof(int64_t), stream_);
  const int64_t* window_slots = window_slots_of_step(batch, positions, B);
  const DeviceForwardContext ctx{config_,
                                 device_,
                                 stream_,
                                 ops,
                                 scratch_,
                                 context_scratch_,
                                 staging_,
                                 kv_format_,
                                 pools_,
                                 attention_,
                                 batch,
                                 positions,
                                 positions_dev,
                                 ids_dev,
                                 B,
                                 graphs_.step_graphed() && device_slots,
                                 window_slots,
                                 st.timeline,
                                 routing_failures,
                                 kv_failures,
                                 &compressors_};
  if (st.timeline != nullptr) {
    st.timeline->begin();
  }
  compressors_.plan(ctx);
  // The attention plugin in the pieces: the layers' work described now (a replay runs no host
  // code), at a shape the bucket keeps; a new shape makes the bucket's graphs again.
  const bool attention_in_graphs = ctx.graphed && attention_graphable_;
  if (attention_in_graphs) {
    graphed_attention_.describe(ctx, weights_.layers, st);
    graphs_.require_layout(graphed_attention_.layout_key());
  }
  // Streams [B, n, D]: the embedding copied into every stream.
  float* streams = scratch_.get<float>("step.streams", B * n * D);
  float* x = scratch_.get<float>("step.x", B * D);
  float* block_out = scratch_.get<float>("step.block_out", B * D);
  PieceQueue pieces(graphs_);
  pieces.add([&] {
    if (weights_.embed.bf16) {
      ops.embed_bf16(stream_, static_cast<const uint16_t*>(weights_.embed.data), D, ids_dev, B, n,
                     streams);
    } else {
      ops.embed_f32(stream_, static_cast<const float*>(weights_.embed.data), D, ids_dev, B, n,
                    streams);
    }
    ctx.mark("embedding");
  });
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    // Queued work may run in the next iteration (with its first piece): captures by value.
    const DeviceLayerWeights* lw = &weights_.layers[static_cast<size_t>(l)];
    const float* inv_freq = inv_freq_[static_cast<size_t>(l)].as<float>();
    const HcCoefficients attn_hc = hc_buffers(ctx, lw->hc_attn, B);
    const AttentionBuffers attn = attention_buffers(ctx, l, lw->attn);
    pieces.add([&, l, lw, inv_freq, attn_hc, attn] {
      hc_coefficients(ctx, lw->hc_attn, streams, B, attn_hc);
      ops.hc_pre_mix(stream_, attn_hc.pre, streams, B, n, D, x);
      rms_norm(ops, stream_, x, B, D, lw->attn_norm, eps);
      ctx.mark("mHC + norms");
      attention_inputs(ctx, l, lw->attn, inv_freq, x, attn);
      if (attention_in_graphs) {
        graphed_attention_.launch(ctx, l, attn);
      }
    });
    if (!attention_in_graphs) {  // the plugin (and what stores from host slots) eagerly
      pieces.flush();
      attention_cache_and_run(ctx, l, lw->attn, inv_freq, attn, st);
    }
    pieces.add(
        [&, lw, inv_freq, attn] { attention_output(ctx, lw->attn, inv_freq, attn, block_out); });
    if (comm_ != nullptr) {  // sum over the wo_b shards
      pieces.flush();
      all_reduce_block(block_out, T * D);
      ctx.mark("collectives");
    }
    const HcCoefficients ffn_hc = hc_buffers(ctx, lw->hc_ffn, B);
    pieces.add([&, l, lw, attn_hc, ffn_hc] {
      ops.hc_post_mix(stream_, attn_hc.post, attn_hc.comb, block_out, B, n, D, streams);
      hc_coefficients(ctx, lw->hc_ffn, streams, B, ffn_hc);
      ops.hc_pre_mix(stream_, ffn_hc.pre, streams, B, n, D, x);
      rms_norm(ops, stream_, x, B, D, lw->ffn_norm, eps);
      ctx.mark("mHC + norms");
      device_moe_forward(ctx, l, lw->ffn, x, block_out);
    });
    if (comm_ != nullptr) {  // sum over the expert shards
      pieces.flush();
      all_reduce_block(block_out, T * D);
      ctx.mark("collectives");
    }
    pieces.add([&, ffn_hc] {
      ops.hc_post_mix(stream_, ffn_hc.post, ffn_hc.comb, block_out, B, n, D, streams);
    });
    if (st.capture_streams) {
      pieces.flush();
      std::vector<float>& kept = st.layer_streams.emplace_back(static_cast<size_t>(T * n * D));
      device_.copy(kept.data(), streams, kept.size() * sizeof(float),
                   device::CopyKind::kDeviceToHost, stream_);
      device_.synchronize(stream_);
    }
  }
  pieces.flush();
  graphs_.end_step();
  compressors_.download(ctx);

  Logits logits;
  const StepReturn back = vocabulary_head(batch, streams, routing_failures, logits);
  ctx.mark("head + logits to host");
  device_.synchronize(stream_);
  staging_.reset();
  // Before anything of the step is kept: a non-finite row given to the kv format fails it.
  check_kv_stores(config_, kv_format_, std::span<const int64_t>(back.failures + L, L * kKvStores),
                  batch);
  // After the synchronisation: the snapshots' compressor states have arrived.
  compressors_.finish(config_, batch);
  for (const SequenceChunk& c : batch.chunks) {
    c.kv->advance(static_cast<int64_t>(c.tokens.size()));
  }
  check_routing(config_, std::span<const int64_t>(back.failures, L), batch);
  merge_shard_scans(back, logits);
  return logits;
}

const int64_t* DeviceModel::window_slots_of_step(const ForwardBatch& batch,
                                                 const std::vector<int64_t>& positions,
                                                 int64_t rows) {
  if (!kv_format_.stores_from_device_slots()) {
    return nullptr;
  }
  const int64_t L = config_.num_layers;
  std::vector<int64_t> slots(static_cast<size_t>(L * rows), -1);  // -1: a padding row
  for (int64_t l = 0; l < L; ++l) {
    take_window_slots(batch, positions, l, slots.data() + l * rows);
  }
  auto* on_device = scratch_.get<int64_t>("step.window_slots", L * rows);
  staging_.upload(on_device, std::span<const int64_t>(slots), stream_);
  return on_device;
}

void DeviceModel::all_reduce_block(float* block_out, int64_t count) {
  if (!bf16_collectives_) {
    comm_->all_reduce_sum(block_out, static_cast<size_t>(count), stream_);
    return;
  }
  auto* wire = scratch_.get<uint16_t>("collective.bf16", count);
  const device::DeviceOps& ops = device_.ops();
  ops.round_to_bf16(stream_, block_out, count, wire);
  comm_->all_reduce_sum_bf16(wire, static_cast<size_t>(count), stream_);
  ops.widen_bf16(stream_, wire, count, block_out);
}

}  // namespace tessera::dsv4
