#include "model/graphed_attention.hpp"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <nlohmann/json.hpp>

#include "device/plugin_device.hpp"
#include "util/check.hpp"

namespace tessera::dsv4 {
namespace {

constexpr size_t kAlign = 256;
constexpr int64_t kSmallestExtent = 64;  // shapes start here, then double

int64_t round_up_pow2(int64_t n) {
  return static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(std::max(n, kSmallestExtent))));
}

// The shape's slots and visible entries grown to hold one layer's batch (plugin_abi.h,
// ts_attention_shape).
void grow(ts_attention_shape& shape, const ts_attention_layer& layer,
          const ts_attention_batch& batch) {
  const int64_t m = layer.compress_ratio;
  int64_t slots = 0, visible = 0;
  for (int32_t s = 0; s < batch.n_sequences; ++s) {
    const ts_attention_sequence& seq = batch.sequences[s];
    const int64_t last = seq.first_position + seq.n_queries - 1;
    slots += last - seq.window_first_position + 1;
    if (m == 0) {
      continue;
    }
    slots += std::min(seq.n_compressed, (last + 1) / m);
    for (int64_t p = seq.first_position; p <= last; ++p) {
      visible += std::min(seq.n_compressed, (p + 1) / m);
    }
  }
  shape.n_slots = std::max(shape.n_slots, slots);
  shape.n_visible = std::max(shape.n_visible, visible);
}

ts_attention_inputs inputs(const DeviceForwardContext& ctx) {
  ts_attention_inputs in{};
  in.struct_size = sizeof in;
  in.kv_pool = ctx.pools.main.data();
  in.index_pool = ctx.pools.indexer.data();
  in.kv = ctx.kv_format.reader();
  return in;
}

}  // namespace

bool GraphedAttention::capable(const PluginInstance& attention) {
  const ts_plugin_descriptor* d = attention.descriptor();
  if (d == nullptr || d->abi_minor < 7 || d->capabilities_json == nullptr) {
    return false;
  }
  const nlohmann::json caps = nlohmann::json::parse(d->capabilities_json, nullptr, false);
  const auto it = caps.is_object() ? caps.find("cuda_graph") : caps.end();
  if (it == caps.end() || !it->is_boolean() || !it->get<bool>()) {
    return false;
  }
  const auto& table = attention.table<ts_attention_table>();
  return table.struct_size >= offsetof(ts_attention_table, run_shaped) + sizeof(void*) &&
         table.plan_shape != nullptr && table.run_shaped != nullptr;
}

void GraphedAttention::reshape(const DeviceForwardContext& ctx, Bucket& bucket,
                               const ts_attention_shape& shape) {
  const auto& table = ctx.attention.table<ts_attention_table>();
  const ts_device device = device::plugin_device(ctx.device, ctx.stream);
  bucket.shape = shape;
  bucket.offsets.clear();
  bucket.sizes.clear();
  bucket.workspace_bytes = 0;
  size_t total = 0;
  for (const std::unique_ptr<AttentionBatch>& b : batches_) {
    size_t workspace = 0, host = 0;
    ctx.attention.check(
        table.plan_shape(ctx.attention.get(), &b->layer(), &shape, device, &workspace, &host),
        "plan_shape");
    bucket.offsets.push_back(total);
    bucket.sizes.push_back(host);
    total += (host + kAlign - 1) / kAlign * kAlign;
    bucket.workspace_bytes = std::max(bucket.workspace_bytes, workspace);
  }
  bucket.host = ctx.device.allocate_host(std::max<size_t>(total, 1));
  bucket.key = next_key_++;
}

void GraphedAttention::describe(const DeviceForwardContext& ctx,
                                std::span<const DeviceLayerWeights> layers, ForwardStats& stats) {
  const ModelConfig& cfg = ctx.config;
  batches_.clear();
  ts_attention_shape need{sizeof(ts_attention_shape), static_cast<int32_t>(ctx.rows), 0, 0};
  for (int64_t l = 0; l < cfg.num_layers; ++l) {
    const DeviceAttentionWeights& w = layers[static_cast<size_t>(l)].attn;
    batches_.push_back(std::make_unique<AttentionBatch>(cfg, l, w.wq_b.out / cfg.head_dim,
                                                        w.attn_sink, ctx.batch, ctx.positions));
    grow(need, batches_.back()->layer(), batches_.back()->batch());
  }
  Bucket& bucket = buckets_[ctx.rows];
  if (bucket.host == nullptr || need.n_slots > bucket.shape.n_slots ||
      need.n_visible > bucket.shape.n_visible) {  // grows only: a shrinking batch keeps it
    need.n_slots = std::max(round_up_pow2(need.n_slots), bucket.shape.n_slots);
    need.n_visible = std::max(round_up_pow2(need.n_visible), bucket.shape.n_visible);
    reshape(ctx, bucket, need);
  }
  step_ = &bucket;
  key_ = bucket.key;
  workspace_ = ctx.scratch.bytes("attn.graph_workspace", bucket.workspace_bytes);

  const auto& table = ctx.attention.table<ts_attention_table>();
  const ts_device device = device::plugin_device(ctx.device, ctx.stream);
  for (size_t l = 0; l < batches_.size(); ++l) {
    ts_attention_inputs in = inputs(ctx);
    in.host_workspace = bucket.host.get() + bucket.offsets[l];
    in.host_workspace_bytes = bucket.sizes[l];
    ts_attention_outputs out{};
    out.struct_size = sizeof out;
    ctx.attention.check(
        table.run_shaped(ctx.attention.get(), &batches_[l]->layer(), &batches_[l]->batch(),
                         &bucket.shape, &in, &out, nullptr, 0, device, TS_ATTENTION_DESCRIBE),
        "run_shaped (describe)");
    stats.indexer_entries_scored += out.entries_scored;
  }
}

void GraphedAttention::launch(const DeviceForwardContext& ctx, int64_t layer,
                              const AttentionBuffers& b) const {
  TS_CHECK(step_ != nullptr && static_cast<size_t>(layer) < batches_.size(),
           "graphed attention: layer {} launched before the step was described", layer);
  const auto l = static_cast<size_t>(layer);
  ts_attention_inputs in = inputs(ctx);
  in.q = b.q;
  in.index_q = b.index_q;
  in.index_w = b.index_w;
  in.host_workspace = step_->host.get() + step_->offsets[l];
  in.host_workspace_bytes = step_->sizes[l];
  ts_attention_outputs out{};
  out.struct_size = sizeof out;
  out.out = b.o;
  const auto& table = ctx.attention.table<ts_attention_table>();
  ctx.attention.check(
      table.run_shaped(ctx.attention.get(), &batches_[l]->layer(), nullptr, &step_->shape, &in,
                       &out, workspace_, step_->workspace_bytes,
                       device::plugin_device(ctx.device, ctx.stream), TS_ATTENTION_LAUNCH),
      "run_shaped (launch)");
  ctx.mark("attention: plugin (indexer + sparse attention)");
}

}  // namespace tessera::dsv4
