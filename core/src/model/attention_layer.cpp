#include "model/attention_layer.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <utility>
#include <vector>

#include "model/attention_batch.hpp"
#include "model/compressor_pass.hpp"
#include "ops/compute_threads.hpp"
#include "ops/linear.hpp"
#include "ops/norms.hpp"
#include "ops/tree_sum.hpp"
#include "util/uninitialized_vector.hpp"

namespace tessera::dsv4 {

namespace {

// Products of one input with several weights, computed together (ops::linear_group):
// add(w) returns the product's row-major [rows, w.out] output, every value written by run() (not
// zeroed first: serial memset on the loop thread).
class Projections {
 public:
  Projections(const float* x, int64_t rows) : x_(x), rows_(rows) {}
  UninitializedVector<float>& add(const Tensor& w) {
    const int64_t out = w.shape[0];
    outputs_.emplace_back(static_cast<size_t>(rows_ * out));
    gemms_.push_back(ops::weight_product(x_, rows_, w.shape[1], w, nullptr, out));
    return outputs_.back();
  }
  void run() {
    for (size_t i = 0; i < gemms_.size(); ++i) {
      gemms_[i].y = outputs_[i].data();
    }
    ops::linear_group(gemms_);
  }

 private:
  const float* x_;
  int64_t rows_;
  std::deque<UninitializedVector<float>> outputs_;  // stable addresses as more are added
  std::vector<ops::GemmNtArgs> gemms_;
};

// A compressor's projections of x: kv rows and gate rows (ape still to be added), [T, c*d] each.
struct CompressorInput {
  UninitializedVector<float>* kv = nullptr;
  UninitializedVector<float>* gate = nullptr;
};

CompressorInput add_compressor(Projections& p, const Compressor& w) {
  UninitializedVector<float>& kv = p.add(w.wkv);
  UninitializedVector<float>& gate = p.add(w.wgate);
  return {&kv, &gate};
}

// Feeds every token of the batch through a compressor (model/compressor_pass.hpp) and stores the
// closed windows' entries in the main or indexer cache.
void run_compressor(const AttentionContext& ctx, int64_t layer, const Compressor& w,
                    const ops::RopeTable& rope, const ForwardBatch& batch,
                    const std::vector<int64_t>& positions, const CompressorInput& input,
                    bool is_indexer) {
  const CompressorHostWeights host{w.ape.ptr(), w.norm.ptr(), w.wkv.shape[0], w.norm.shape[0]};
  const CompressedEntries entries =
      compress_tokens(ctx.config, layer, host, rope, batch, positions, input.kv->data(),
                      input.gate->data(), is_indexer);
  if (entries.slots.empty()) return;
  const ts_kv_layout& layout =
      is_indexer ? ctx.kv_format.indexer_layout() : ctx.kv_format.main_layout();
  ctx.kv_format.store(layout, entries.rows.data(), entries.slots,
                      is_indexer ? ctx.pools.indexer.data() : ctx.pools.main.data());
}

}  // namespace

void attention_forward(const AttentionContext& ctx, int64_t layer, const Attention& w,
                       const ops::RopeTable& rope, const ForwardBatch& batch,
                       const std::vector<int64_t>& positions, const float* x, float* out,
                       ForwardStats& stats) {
  const ModelConfig& cfg = ctx.config;
  const int64_t T = static_cast<int64_t>(positions.size());
  // Heads on this rank: all of them, or a tensor-parallel shard (wq_b rows, wo_a groups).
  const int64_t Dh = cfg.head_dim, H = w.wq_b.shape[0] / Dh, m = cfg.compress_ratio(layer);
  const float eps = static_cast<float>(cfg.rms_norm_eps);

  // Every product of x in one pass, then every product of the normalised q latent in another.
  Projections of_x(x, T);
  UninitializedVector<float>& q_lat = of_x.add(w.wq_a);  // [T, q_lora_rank]
  UninitializedVector<float>& kv = of_x.add(w.wkv);      // [T, Dh]
  CompressorInput main_input, index_input;
  UninitializedVector<float>* index_w_rows = nullptr;  // [T, IH]
  if (m > 0) {
    main_input = add_compressor(of_x, *w.compressor);
  }
  if (m == 4) {
    index_input = add_compressor(of_x, w.indexer->compressor);
    index_w_rows = &of_x.add(w.indexer->weights_proj);
  }
  of_x.run();
  ops::for_each_row_chunk(T, kMinTokensPerChunk, [&](int64_t first, int64_t last) {
    ops::rms_norm(q_lat.data() + first * cfg.q_lora_rank, last - first, cfg.q_lora_rank,
                  w.q_norm.ptr(), eps);
  });
  Projections of_q_lat(q_lat.data(), T);
  UninitializedVector<float>& q = of_q_lat.add(w.wq_b);  // [T, H, Dh]
  UninitializedVector<float>* index_q_rows = m == 4 ? &of_q_lat.add(w.indexer->wq_b) : nullptr;
  of_q_lat.run();
  // The new tokens' kv go into the window cache before attention (each query sees itself): their
  // slots taken here (the page pools are not thread-safe), the rows stored by the per-token pass
  // below right after their rotation (a kv format's store may run on several threads at once, on
  // other slots: plugin_abi.h), instead of ~15 us of a 64-sequence layer on this thread alone.
  std::vector<int64_t> slots(static_cast<size_t>(T));
  take_window_slots(batch, positions, layer, slots.data());
  const ts_kv_layout& main_layout = ctx.kv_format.main_layout();
  std::atomic<bool> refused{false};
  // Per token (each alone, so on any thread with the same bits): ~28 us of a 64-sequence step's
  // layer on one thread.
  ops::for_each_row_chunk(T, kMinTokensPerChunk, [&](int64_t first, int64_t last) {
    ops::rms_norm_unweighted(q.data() + first * H * Dh, (last - first) * H, Dh, eps);
    ops::rms_norm(kv.data() + first * Dh, last - first, Dh, w.kv_norm.ptr(), eps);
    for (int64_t t = first; t < last; ++t) {
      rope.apply(q.data() + t * H * Dh, H, Dh, positions[t]);
      rope.apply(kv.data() + t * Dh, 1, Dh, positions[t]);
    }
    try {  // items must not throw
      ctx.kv_format.store(main_layout, kv.data() + first * Dh,
                          std::span<const int64_t>(slots).subspan(first, last - first),
                          ctx.pools.main.data());
    } catch (...) {
      refused = true;
    }
  });
  if (refused) {  // again for the whole batch: the error names the row of the batch
    ctx.kv_format.store(main_layout, kv.data(), slots, ctx.pools.main.data());
  }

  UninitializedVector<float> index_q, index_w;
  if (m > 0) {  // main first: append_compressed (main) allocates the indexer slot too
    run_compressor(ctx, layer, *w.compressor, rope, batch, positions, main_input, false);
    if (m == 4) {
      run_compressor(ctx, layer, w.indexer->compressor, rope, batch, positions, index_input, true);
    }
  }
  if (m == 4) {
    const int64_t IH = cfg.index_n_heads, ID = cfg.index_head_dim;
    index_q = std::move(*index_q_rows);  // [T, IH, ID], no norm
    index_w = std::move(*index_w_rows);  // [T, IH]
    // nI^-0.5 on the head weights and index_head_dim^-0.5 on the score (TRANSFORMERS_NOTES §F)
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(IH)) /
                                           std::sqrt(static_cast<double>(ID)));
    const int64_t weights_per_token = static_cast<int64_t>(index_w.size()) / T;
    ops::for_each_row_chunk(T, kMinTokensPerChunk, [&](int64_t first, int64_t last) {
      for (int64_t t = first; t < last; ++t) {
        rope.apply(index_q.data() + t * IH * ID, IH, ID, positions[t]);
        for (int64_t h = 0; h < weights_per_token; ++h) {
          index_w[t * weights_per_token + h] *= scale;
        }
      }
    });
  }

  const AttentionBatch described(cfg, layer, H, w.attn_sink.ptr(), batch, positions);
  const auto& table = ctx.backend.table<ts_attention_table>();
  size_t ws_bytes = 0;
  ctx.backend.check(
      table.plan(ctx.backend.get(), &described.layer(), &described.batch(), &ws_bytes), "plan");
  if (ctx.workspace.size() < ws_bytes) ctx.workspace.resize(ws_bytes);
  UninitializedVector<float> o(static_cast<size_t>(T * H * Dh));  // run() writes every value
  ts_attention_inputs in{};
  in.struct_size = sizeof in;
  in.q = q.data();
  in.index_q = index_q.empty() ? nullptr : index_q.data();
  in.index_w = index_w.empty() ? nullptr : index_w.data();
  in.kv_pool = ctx.pools.main.data();
  in.index_pool = ctx.pools.indexer.data();
  in.kv = ctx.kv_format.reader();
  ts_attention_outputs result{};
  result.struct_size = sizeof result;
  result.out = o.data();
  ctx.backend.check(
      table.run(ctx.backend.get(), &described.layer(), &described.batch(), &in, &result,
                ctx.workspace.data(), ctx.workspace.size(), device::kHostPluginDevice),
      "run");
  stats.indexer_entries_scored += result.entries_scored;

  // Grouped low-rank output: group g = heads [g*H/G, (g+1)*H/G); wo_a viewed [G, OL, H/G*Dh].
  // On a tensor-parallel rank G is its share of the groups and `out` is a partial sum over them
  // (wo_b holds the matching input columns); the caller all-reduces it.
  const int64_t OL = cfg.o_lora_rank, G = w.wo_a.shape[0] / OL, in_g = H / G * Dh;
  // Each token's output, rotated back, is copied group-major ([G, T, in_g]) while it is in this
  // thread's cache: a group's rows then lie end to end, where in o they lie H * Dh apart (4 KiB
  // for 8 x 128), which linear_group would copy together first on this thread alone.
  UninitializedVector<float> by_group(o.size());
  ops::for_each_row_chunk(T, kMinTokensPerChunk, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      float* row = o.data() + t * H * Dh;
      rope.apply(row, H, Dh, positions[t], true);
      for (int64_t g = 0; g < G; ++g) {
        std::copy_n(row + g * in_g, in_g, by_group.data() + (g * T + t) * in_g);
      }
    }
  });
  UninitializedVector<float> z(static_cast<size_t>(T * G * OL));  // every group's columns written
  std::vector<ops::GemmNtArgs> groups;
  for (int64_t g = 0; g < G; ++g) {
    groups.push_back(ops::weight_product(by_group.data() + g * T * in_g, T, in_g, w.wo_a,
                                         z.data() + g * OL, G * OL, g * OL, OL));
  }
  ops::linear_group(groups);
  if (ctx.reduction_parts <= 1) {
    ops::linear(z.data(), T, w.wo_b, out);
    return;
  }
  // executor.reduction_parts: wo_b's sum over G * OL inputs as that many products over
  // contiguous input ranges, added by the fixed tree (ops/tree_sum.hpp).
  const int64_t width = G * OL / ctx.reduction_parts;
  std::vector<UninitializedVector<float>> store;
  const std::vector<float*> sums =
      ops::part_buffers(out, ctx.reduction_parts, T * cfg.hidden_size, store);
  std::vector<ops::GemmNtArgs> products;
  for (size_t q = 0; q < sums.size(); ++q) {
    const ops::GemmNtArgs whole =
        ops::weight_product(z.data(), T, G * OL, w.wo_b, sums[q], w.wo_b.shape[0]);
    products.push_back(ops::input_columns(whole, static_cast<int64_t>(q) * width, width));
  }
  ops::linear_group(products);
  ops::tree_sum(sums, T * cfg.hidden_size, out);
}

}  // namespace tessera::dsv4
