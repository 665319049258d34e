#include "model/attention_batch.hpp"

#include <cmath>

namespace tessera::dsv4 {

AttentionBatch::AttentionBatch(const ModelConfig& cfg, int64_t layer, int64_t heads,
                               const float* attn_sink, const ForwardBatch& batch,
                               const std::vector<int64_t>& positions) {
  const int64_t m = cfg.compress_ratio(layer);
  seqs_.reserve(batch.chunks.size());
  for (int64_t row = 0; const SequenceChunk& chunk : batch.chunks) {
    const auto n = static_cast<int64_t>(chunk.tokens.size());
    ts_attention_sequence s{};
    s.query_offset = static_cast<int32_t>(row);
    s.n_queries = static_cast<int32_t>(n);
    s.first_position = positions[row];
    s.window_first_position = chunk.kv->window_first_position(layer);
    chunk.kv->append_window_slots(layer, s.window_first_position, s.first_position + n - 1,
                                  window_slots_.emplace_back());
    auto& cs = comp_slots_.emplace_back();
    auto& is = idx_slots_.emplace_back();
    s.n_compressed = m > 0 ? chunk.kv->n_compressed(layer) : 0;
    if (m > 0) {
      chunk.kv->append_compressed_slots(layer, cs, m == 4 ? &is : nullptr);
    }
    seqs_.push_back(s);
    row += n;
  }
  for (size_t i = 0; i < seqs_.size(); ++i) {
    seqs_[i].window_slots = window_slots_[i].data();
    seqs_[i].compressed_slots = comp_slots_[i].data();
    seqs_[i].indexer_slots = idx_slots_[i].data();
  }

  const int64_t Dh = cfg.head_dim;
  layer_.struct_size = sizeof layer_;
  layer_.n_heads = static_cast<int32_t>(heads);
  layer_.head_dim = static_cast<int32_t>(Dh);
  layer_.rope_dim = static_cast<int32_t>(cfg.rope_dim);
  layer_.window = static_cast<int32_t>(cfg.window);
  layer_.compress_ratio = static_cast<int32_t>(m);
  layer_.index_n_heads = static_cast<int32_t>(cfg.index_n_heads);
  layer_.index_head_dim = static_cast<int32_t>(cfg.index_head_dim);
  layer_.index_topk = static_cast<int32_t>(cfg.index_topk);
  layer_.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Dh)));
  layer_.attn_sink = attn_sink;
  batch_ = ts_attention_batch{sizeof(ts_attention_batch), static_cast<int32_t>(seqs_.size()),
                              static_cast<int32_t>(positions.size()), seqs_.data()};
}

}  // namespace tessera::dsv4
