#include "model/compressor_pass.hpp"

#include <utility>

#include "ops/compute_threads.hpp"
#include "ops/norms.hpp"

namespace tessera::dsv4 {

CompressedEntries compress_tokens(const ModelConfig& config, int64_t layer,
                                  const CompressorHostWeights& w, const ops::RopeTable& rope,
                                  const ForwardBatch& batch, const std::vector<int64_t>& positions,
                                  const float* kv, float* gate, bool is_indexer) {
  const int64_t m = config.compress_ratio(layer), width = w.width, dim = w.dim;
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
      float* g = gate + row * width;
      const float* ape = w.ape + (p % m) * width;
      for (int64_t j = 0; j < width; ++j) {
        g[j] += ape[j];
      }
      auto entry = state.push(p, kv + row * width, g);
      chunk.kv->compressor_pushed(layer, is_indexer, p + 1);  // prefix-cache snapshots
      if (!entry) {
        continue;
      }
      ops::rms_norm(entry->data(), 1, dim, w.norm, static_cast<float>(config.rms_norm_eps));
      const int64_t k = p / m;
      rope.apply(entry->data(), 1, dim, k * m);
      entries[static_cast<size_t>(c)].emplace_back(k, std::move(*entry));
    }
  });
  CompressedEntries out;
  for (int64_t c = 0; c < n_chunks; ++c) {
    SequenceKv& kv_cache = *batch.chunks[static_cast<size_t>(c)].kv;
    for (auto& [k, entry] : entries[static_cast<size_t>(c)]) {
      out.slots.push_back(is_indexer ? kv_cache.indexer_slot(layer, k)  // allocated with main
                                     : kv_cache.append_compressed(layer));
      out.rows.insert(out.rows.end(), entry.begin(), entry.end());
    }
  }
  return out;
}

}  // namespace tessera::dsv4
