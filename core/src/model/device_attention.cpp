// The attention block of the device forward (model/attention_layer.hpp has the host one and the
// algorithm), every part on the device, in three parts: the inputs (projections, norms, RoPE, the
// indexer's queries and weights: work sized by the step's tokens alone, which a graph may hold);
// the cache and the plugin (kv stored by the kv format, the compressors of
// model/device_compressors.hpp, the attention plugin: eager, they follow the step's pages and
// windows; a graphed step with a capable plugin and kv format runs them in the inputs' piece
// instead, model/graphed_attention.hpp); the output (inverse RoPE, the grouped output
// projection: graphable again).
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "device/plugin_device.hpp"
#include "model/attention_batch.hpp"
#include "model/device_forward_context.hpp"
#include "util/check.hpp"

namespace tessera::dsv4 {

AttentionBuffers attention_buffers(const DeviceForwardContext& ctx, int64_t layer,
                                   const DeviceAttentionWeights& w) {
  const ModelConfig& cfg = ctx.config;
  device::Scratch& sc = ctx.scratch;
  const int64_t T = ctx.rows;
  const int64_t Dh = cfg.head_dim, H = w.wq_b.out / Dh, Q = w.wq_a.out;
  AttentionBuffers b;
  b.q_lat = sc.get<float>("attn.q_lat", T * Q);  // [T, q_lora_rank]
  b.kv = sc.get<float>("attn.kv", T * Dh);       // [T, Dh]
  b.q = sc.get<float>("attn.q", T * H * Dh);     // [T, H, Dh]
  b.o = sc.get<float>("attn.o", T * H * Dh);     // [T, H, Dh], the plugin writes every value
  if (cfg.compress_ratio(layer) == 4) {
    b.index_q = sc.get<float>("attn.index_q", T * cfg.index_n_heads * cfg.index_head_dim);
    b.index_w = sc.get<float>("attn.index_w", T * w.index_weights_proj.out);  // [T, IH]
  }
  return b;
}

namespace {

// The layer's compressors after their projections: the windows the step closes.
void run_compressors(const DeviceForwardContext& ctx, int64_t layer,
                     const DeviceAttentionWeights& w, const float* inv_freq) {
  if (ctx.config.compress_ratio(layer) == 0) {
    return;
  }
  ctx.compressors->run(ctx, layer, *w.compressor, false, inv_freq);
  if (w.index_compressor) {
    ctx.compressors->run(ctx, layer, *w.index_compressor, true, inv_freq);
  }
  ctx.mark("attention: compressors");
}

}  // namespace

void attention_inputs(const DeviceForwardContext& ctx, int64_t layer,
                      const DeviceAttentionWeights& w, const float* inv_freq, const float* x,
                      const AttentionBuffers& b) {
  const ModelConfig& cfg = ctx.config;
  const device::DeviceOps& ops = ctx.ops;
  const device::Stream& s = ctx.stream;
  const int64_t T = ctx.rows;
  const int64_t Dh = cfg.head_dim, H = w.wq_b.out / Dh, rope_dim = cfg.rope_dim, Q = w.wq_a.out;
  const auto eps = static_cast<float>(cfg.rms_norm_eps);
  linear(ops, s, x, T, w.wq_a, b.q_lat);
  linear(ops, s, x, T, w.wkv, b.kv);
  rms_norm(ops, s, b.q_lat, T, Q, w.q_norm, eps);
  linear(ops, s, b.q_lat, T, w.wq_b, b.q);
  ops.rms_norm(s, b.q, T * H, Dh, nullptr, eps);
  rms_norm(ops, s, b.kv, T, Dh, w.kv_norm, eps);
  ops.rope(s, b.q, T, H, Dh, rope_dim, ctx.positions_dev, inv_freq, false);
  ops.rope(s, b.kv, T, 1, Dh, rope_dim, ctx.positions_dev, inv_freq, false);
  ctx.mark("attention: q, kv projections");
  if (b.index_q != nullptr) {  // CSA: the indexer's queries and head weights
    const int64_t IH = cfg.index_n_heads, ID = cfg.index_head_dim;
    linear(ops, s, b.q_lat, T, w.index_wq_b, b.index_q);  // [T, IH, ID], no norm
    linear(ops, s, x, T, w.index_weights_proj, b.index_w);
    ops.rope(s, b.index_q, T, IH, ID, rope_dim, ctx.positions_dev, inv_freq, false);
    // nI^-0.5 on the head weights and index_head_dim^-0.5 on the score (TRANSFORMERS_NOTES §F)
    const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(IH)) /
                                          std::sqrt(static_cast<double>(ID)));
    ops.scale(s, b.index_w, T * w.index_weights_proj.out, scale);
    ctx.mark("attention: indexer q, weights");
  }
  if (cfg.compress_ratio(layer) > 0) {  // the compressors' projections of the step's rows
    ctx.compressors->project(ctx, layer, *w.compressor, false, x);
    if (w.index_compressor) {
      ctx.compressors->project(ctx, layer, *w.index_compressor, true, x);
    }
    ctx.mark("attention: compressor projections");
  }
  if (ctx.window_slots != nullptr) {  // the new tokens' kv into the window cache (padding skipped)
    ctx.kv_format.store_device_slots(
        ctx.kv_format.main_layout(), b.kv, T, ctx.window_slots + layer * T, ctx.pools.main.data(),
        device::plugin_device(ctx.device, s), ctx.kv_failures + layer * kKvStores + kWindowKv);
    ctx.mark("attention: kv store");
    run_compressors(ctx, layer, w, inv_freq);  // after the window kv: the same order as eagerly
  }
}

void attention_cache_and_run(const DeviceForwardContext& ctx, int64_t layer,
                             const DeviceAttentionWeights& w, const float* inv_freq,
                             const AttentionBuffers& b, ForwardStats& stats) {
  const ModelConfig& cfg = ctx.config;
  const device::Stream& s = ctx.stream;
  const auto T = static_cast<int64_t>(ctx.positions.size());
  const int64_t Dh = cfg.head_dim, H = w.wq_b.out / Dh, m = cfg.compress_ratio(layer);
  const ts_device plugin_device = device::plugin_device(ctx.device, s);

  // The new tokens' kv into the window cache before attention (each query sees itself), unless
  // attention_inputs stored it from the step's slots on the device.
  // The compressors after it, as attention_inputs runs both when it stores.
  if (ctx.window_slots == nullptr) {
    std::vector<int64_t> slots(static_cast<size_t>(T));
    take_window_slots(ctx.batch, ctx.positions, layer, slots.data());
    ctx.kv_format.store(ctx.kv_format.main_layout(), b.kv, slots, ctx.pools.main.data(),
                        plugin_device, ctx.kv_failures + layer * kKvStores + kWindowKv);
    ctx.mark("attention: kv store");
    run_compressors(ctx, layer, w, inv_freq);
  }

  const AttentionBatch described(cfg, layer, H, w.attn_sink, ctx.batch, ctx.positions);
  const auto& table = ctx.attention.table<ts_attention_table>();
  size_t ws_bytes = 0;
  ctx.attention.check(
      table.plan(ctx.attention.get(), &described.layer(), &described.batch(), &ws_bytes), "plan");
  // Its size follows the context: in the scratch no graph reads.
  void* workspace = ctx.context_scratch.bytes("attn.workspace", ws_bytes);
  ts_attention_inputs in{};
  in.struct_size = sizeof in;
  in.q = b.q;
  in.index_q = b.index_q;
  in.index_w = b.index_w;
  in.kv_pool = ctx.pools.main.data();
  in.index_pool = ctx.pools.indexer.data();
  in.kv = ctx.kv_format.reader();
  // ABI 1.4: the plugin's per-call metadata in the step's page-locked arena.
  if (table.struct_size >= offsetof(ts_attention_table, plan_host) + sizeof(table.plan_host) &&
      table.plan_host != nullptr) {
    size_t host_bytes = 0;
    ctx.attention.check(table.plan_host(ctx.attention.get(), &described.layer(), &described.batch(),
                                        plugin_device, &host_bytes),
                        "plan_host");
    if (host_bytes > 0) {
      in.host_workspace = ctx.staging.reserve(host_bytes);
      in.host_workspace_bytes = host_bytes;
    }
  }
  ts_attention_outputs result{};
  result.struct_size = sizeof result;
  result.out = b.o;
  ctx.attention.check(table.run(ctx.attention.get(), &described.layer(), &described.batch(), &in,
                                &result, workspace, ws_bytes, plugin_device),
                      "run");
  stats.indexer_entries_scored += result.entries_scored;
  if (ctx.rows > T) {  // padding rows of a graph bucket: zero, not what an earlier step left
    ctx.device.fill(b.o + T * H * Dh, 0,
                    static_cast<size_t>((ctx.rows - T) * H * Dh) * sizeof(float), s);
  }
  ctx.mark("attention: plugin (indexer + sparse attention)");
}

void attention_output(const DeviceForwardContext& ctx, const DeviceAttentionWeights& w,
                      const float* inv_freq, const AttentionBuffers& b, float* out) {
  const ModelConfig& cfg = ctx.config;
  const device::DeviceOps& ops = ctx.ops;
  const device::Stream& s = ctx.stream;
  device::Scratch& sc = ctx.scratch;
  const int64_t T = ctx.rows;
  const int64_t Dh = cfg.head_dim, H = w.wq_b.out / Dh, rope_dim = cfg.rope_dim;
  // Grouped low-rank output: group g = heads [g*H/G, (g+1)*H/G), wo_a rows [g*OL, (g+1)*OL).
  // o rotated back, copied group-major [G, T, in_g]; each group's product into z_groups
  // [G, T, OL]; back to token-major z [T, G*OL]; then wo_b.
  const int64_t OL = cfg.o_lora_rank, G = w.wo_a.out / OL, in_g = H / G * Dh;
  ops.rope(s, b.o, T, H, Dh, rope_dim, ctx.positions_dev, inv_freq, true);
  float* by_group = sc.get<float>("attn.by_group", T * H * Dh);
  float* z_groups = sc.get<float>("attn.z_groups", G * T * OL);
  float* z = sc.get<float>("attn.z", T * G * OL);
  ops.swap_outer_axes(s, b.o, T, G, in_g, by_group);
  for (int64_t g = 0; g < G; ++g) {
    linear(ops, s, by_group + g * T * in_g, T, w.wo_a.rows(g * OL, OL), z_groups + g * T * OL);
  }
  ops.swap_outer_axes(s, z_groups, G, T, OL, z);
  linear(ops, s, z, T, w.wo_b, out);
  ctx.mark("attention: output projection");
}

void check_kv_stores(const ModelConfig& config, const KvFormat& format,
                     std::span<const int64_t> failures, const ForwardBatch& batch) {
  static constexpr const char* kWhat[kKvStores] = {"window kv rows", "compressed kv entries",
                                                   "indexer keys"};
  constexpr int64_t kUntouched = 0x7F7F7F7F7F7F7F7F;  // the fill: no non-finite row
  for (int64_t layer = 0; layer < config.num_layers; ++layer) {
    for (int64_t store = 0; store < kKvStores; ++store) {
      const int64_t row = failures[static_cast<size_t>(layer * kKvStores + store)];
      if (row == kUntouched) {
        continue;
      }
      std::string where = "row " + std::to_string(row) + " of the store";
      if (store == kWindowKv) {  // a row of the step: name its sequence's position
        int64_t first = 0;
        for (size_t c = 0; c < batch.chunks.size(); ++c) {
          const auto n = static_cast<int64_t>(batch.chunks[c].tokens.size());
          if (row < first + n) {
            where = "the token at position " +
                    std::to_string(batch.chunks[c].kv->length() + row - first) + " of chunk " +
                    std::to_string(c);
            break;
          }
          first += n;
        }
      }
      TS_CHECK(false,
               "layer {}: the {} given to the kv cache `{}` hold a non-finite value ({}): that "
               "row was not written and the step failed",
               layer, kWhat[store], format.name(), where);
    }
  }
}

}  // namespace tessera::dsv4
