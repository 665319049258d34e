#include "model/attention_layer.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <utility>
#include <vector>

#include "ops/compute_threads.hpp"
#include "ops/linear.hpp"
#include "ops/norms.hpp"
#include "ops/tree_sum.hpp"
#include "util/uninitialized_vector.hpp"

namespace tessera::dsv4 {

namespace {

constexpr ts_device kCpu{TS_DEVICE_CPU, 0, nullptr};

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

// Feeds every token of the batch (its kv and gate projections in `input`) through a compressor;
// each closed window's entry is normalised, rotated at its window start k*m and stored.
// `is_indexer` picks the indexer cache and state. Sequences are independent (each has its own
// state), so their tokens are pushed in parallel, one sequence per item, tokens in order; the
// entries are then given cache slots and stored on this thread in batch order (the page pools are
// not thread-safe), so pages and bytes are the same as a serial run's.
void run_compressor(const AttentionContext& ctx, int64_t layer, const Compressor& w,
                    const ops::RopeTable& rope, const ForwardBatch& batch,
                    const std::vector<int64_t>& positions, const CompressorInput& input,
                    bool is_indexer) {
  const int64_t m = ctx.config.compress_ratio(layer);
  const UninitializedVector<float>& kv = *input.kv;
  UninitializedVector<float>& gate = *input.gate;
  const int64_t width = w.wkv.shape[0];
  const int64_t dim = w.norm.shape[0];
  const auto n_chunks = static_cast<int64_t>(batch.chunks.size());
  std::vector<int64_t> first_row(static_cast<size_t>(n_chunks));
  for (int64_t c = 0, row = 0; c < n_chunks; ++c) {
    first_row[static_cast<size_t>(c)] = row;
    row += static_cast<int64_t>(batch.chunks[static_cast<size_t>(c)].tokens.size());
  }
  // entries[c]: chunk c's closed windows (window index k, normalised and rotated entry).
  std::vector<std::vector<std::pair<int64_t, std::vector<float>>>> entries(
      static_cast<size_t>(n_chunks));
  ops::parallel_for(n_chunks, ops::compute_threads(), [&](int64_t c) {
    const SequenceChunk& chunk = batch.chunks[static_cast<size_t>(c)];
    CompressorState& state =
        is_indexer ? chunk.kv->index_compressor(layer) : chunk.kv->compressor(layer);
    int64_t row = first_row[static_cast<size_t>(c)];
    for (size_t i = 0; i < chunk.tokens.size(); ++i, ++row) {
      const int64_t p = positions[row];
      float* g = gate.data() + row * width;
      const float* ape = w.ape.ptr() + (p % m) * width;
      for (int64_t j = 0; j < width; ++j) {
        g[j] += ape[j];
      }
      auto entry = state.push(p, kv.data() + row * width, g);
      chunk.kv->compressor_pushed(layer, is_indexer, p + 1);  // prefix-cache snapshots
      if (!entry) {
        continue;
      }
      ops::rms_norm(entry->data(), 1, dim, w.norm.ptr(),
                    static_cast<float>(ctx.config.rms_norm_eps));
      const int64_t k = p / m;
      rope.apply(entry->data(), 1, dim, k * m);
      entries[static_cast<size_t>(c)].emplace_back(k, std::move(*entry));
    }
  });
  const ts_kv_layout& layout =
      is_indexer ? ctx.kv_format.indexer_layout() : ctx.kv_format.main_layout();
  uint8_t* pool = is_indexer ? ctx.pools.indexer.data() : ctx.pools.main.data();
  for (int64_t c = 0; c < n_chunks; ++c) {
    SequenceKv& kv_cache = *batch.chunks[static_cast<size_t>(c)].kv;
    for (auto& [k, entry] : entries[static_cast<size_t>(c)]) {
      const int64_t slot = is_indexer ? kv_cache.indexer_slot(layer, k)  // allocated with main
                                      : kv_cache.append_compressed(layer);
      ctx.kv_format.store(layout, entry.data(), std::span<const int64_t>(&slot, 1), pool);
    }
  }
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
  for (int64_t row = 0; const SequenceChunk& chunk : batch.chunks) {
    for (size_t i = 0; i < chunk.tokens.size(); ++i, ++row) {
      slots[row] = chunk.kv->write_window_slot(layer, positions[row]);
    }
  }
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

  // Describe every sequence's cache to the backend.
  std::vector<ts_attention_sequence> seqs;
  std::vector<std::vector<int64_t>> window_slots, comp_slots, idx_slots;
  seqs.reserve(batch.chunks.size());
  for (int64_t row = 0; const SequenceChunk& chunk : batch.chunks) {
    const auto n = static_cast<int64_t>(chunk.tokens.size());
    ts_attention_sequence s{};
    s.query_offset = static_cast<int32_t>(row);
    s.n_queries = static_cast<int32_t>(n);
    s.first_position = positions[row];
    s.window_first_position = chunk.kv->window_first_position(layer);
    chunk.kv->append_window_slots(layer, s.window_first_position, s.first_position + n - 1,
                                  window_slots.emplace_back());
    auto& cs = comp_slots.emplace_back();
    auto& is = idx_slots.emplace_back();
    s.n_compressed = m > 0 ? chunk.kv->n_compressed(layer) : 0;
    if (m > 0) {
      chunk.kv->append_compressed_slots(layer, cs, m == 4 ? &is : nullptr);
    }
    seqs.push_back(s);
    row += n;
  }
  for (size_t i = 0; i < seqs.size(); ++i) {
    seqs[i].window_slots = window_slots[i].data();
    seqs[i].compressed_slots = comp_slots[i].data();
    seqs[i].indexer_slots = idx_slots[i].data();
  }

  ts_attention_layer desc{};
  desc.struct_size = sizeof desc;
  desc.n_heads = static_cast<int32_t>(H);
  desc.head_dim = static_cast<int32_t>(Dh);
  desc.rope_dim = static_cast<int32_t>(cfg.rope_dim);
  desc.window = static_cast<int32_t>(cfg.window);
  desc.compress_ratio = static_cast<int32_t>(m);
  desc.index_n_heads = static_cast<int32_t>(cfg.index_n_heads);
  desc.index_head_dim = static_cast<int32_t>(cfg.index_head_dim);
  desc.index_topk = static_cast<int32_t>(cfg.index_topk);
  desc.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Dh)));
  desc.attn_sink = w.attn_sink.ptr();
  ts_attention_batch tb{sizeof(ts_attention_batch), static_cast<int32_t>(seqs.size()),
                        static_cast<int32_t>(T), seqs.data()};

  const auto& table = ctx.backend.table<ts_attention_table>();
  size_t ws_bytes = 0;
  ctx.backend.check(table.plan(ctx.backend.get(), &desc, &tb, &ws_bytes), "plan");
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
  ctx.backend.check(table.run(ctx.backend.get(), &desc, &tb, &in, &result, ctx.workspace.data(),
                              ctx.workspace.size(), kCpu),
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
