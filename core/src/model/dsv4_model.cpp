#include "model/dsv4_model.hpp"

#include <algorithm>

#include "model/attention_layer.hpp"
#include "model/hyper_connection.hpp"
#include "model/moe.hpp"
#include "ops/compute_threads.hpp"
#include "ops/linear.hpp"
#include "ops/norms.hpp"
#include "util/check.hpp"
#include "util/uninitialized_vector.hpp"

namespace tessera::dsv4 {

Model::Model(const ModelConfig& config, const ModelWeights& weights, const KvFormat& kv_format,
             const PluginInstance& attention, KvPools& pools, Communicator* comm)
    : config_(config),
      weights_(weights),
      kv_format_(kv_format),
      attention_(attention),
      pools_(pools),
      comm_(comm != nullptr && comm->size() > 1 ? comm : nullptr) {
  for (int64_t l = 0; l < config.num_layers; ++l)
    rope_.push_back(ops::RopeTable::for_layer(config, l));
}

Logits Model::forward(const ForwardBatch& batch, ForwardStats* stats) {
  const int64_t T = batch.total_tokens();
  const int64_t D = config_.hidden_size, n = config_.hc_mult, V = config_.vocab_size;
  TS_CHECK(T > 0, "forward: empty batch");
  const ops::Bf16ActivationScope precision(bf16_activations_);
  std::vector<int64_t> positions;
  std::vector<int32_t> ids;
  positions.reserve(static_cast<size_t>(T));
  for (const SequenceChunk& c : batch.chunks) {
    for (size_t i = 0; i < c.tokens.size(); ++i) {
      TS_CHECK(c.tokens[i] >= 0 && c.tokens[i] < V, "token id {} outside the vocabulary ({})",
               c.tokens[i], V);
      positions.push_back(c.kv->length() + static_cast<int64_t>(i));
      ids.push_back(c.tokens[i]);
    }
  }

  // Streams X [T, n, D]: the embedding copied into every stream (on the compute threads, like
  // every other per-token pass: 512 KiB at 64 tokens).
  UninitializedVector<float> streams(static_cast<size_t>(T * n * D));
  ops::for_each_row_chunk(T, kMinTokensPerChunk, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      for (int64_t k = 0; k < n; ++k) {
        std::copy_n(weights_.embed.ptr() + ids[t] * D, D, streams.begin() + (t * n + k) * D);
      }
    }
  });

  ForwardStats local;
  ForwardStats& st = stats ? *stats : local;
  UninitializedVector<float> x(static_cast<size_t>(T * D)), block_out(x.size());
  AttentionContext ctx{config_, kv_format_, pools_, attention_, workspace_, reduction_parts_};
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    const Layer& layer = weights_.layers[l];
    HcMix mix = hc_pre(config_, layer.hc_attn, streams.data(), T, x.data(), layer.attn_norm.ptr());
    attention_forward(ctx, l, layer.attn, rope_[l], batch, positions, x.data(), block_out.data(),
                      st);
    if (comm_) comm_->all_reduce_sum(block_out.data(), block_out.size());  // sum over wo_b shards
    hc_post(config_, mix, block_out.data(), streams.data(), T);

    mix = hc_pre(config_, layer.hc_ffn, streams.data(), T, x.data(), layer.ffn_norm.ptr());
    moe_forward(config_, layer.ffn, config_.is_hash_layer(l), x.data(), ids.data(), T,
                block_out.data(), reduction_parts_);
    if (comm_) comm_->all_reduce_sum(block_out.data(), block_out.size());  // sum over expert shards
    hc_post(config_, mix, block_out.data(), streams.data(), T);
    if (st.capture_streams) {
      st.layer_streams.emplace_back(streams.begin(), streams.end());
    }
  }
  for (const SequenceChunk& c : batch.chunks) c.kv->advance(static_cast<int64_t>(c.tokens.size()));

  // Only the rows that need logits go through hc_head, the norm and the vocabulary head.
  Logits logits;
  logits.vocab = V;
  const std::vector<int64_t> rows = logit_rows(batch, logits.chunk_rows);
  const auto R = static_cast<int64_t>(rows.size());
  UninitializedVector<float> picked(static_cast<size_t>(R * n * D)), y(static_cast<size_t>(R * D));
  ops::for_each_row_chunk(R, kMinTokensPerChunk, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      std::copy_n(streams.begin() + rows[r] * n * D, n * D, picked.begin() + r * n * D);
    }
  });
  hc_head(config_, weights_, picked.data(), R, y.data(), weights_.norm.ptr());
  logits.values.resize(static_cast<size_t>(R * V));
  if (!comm_) {
    logits.scans.resize(static_cast<size_t>(R));
    logits.group_max.resize(static_cast<size_t>(R * TS_LOGIT_GROUP_COUNT(V)));
    ops::linear_scanned(y.data(), R, weights_.head, logits.values.data(), logits.scans,
                        logits.group_max);
    return logits;
  }
  // Vocabulary shards: rank r holds rows [r*V/N, (r+1)*V/N) of the head.
  const int64_t N = comm_->size(), Vr = weights_.head.shape[0];
  TS_CHECK_EQ(Vr * N, V, "vocabulary shard of the head");
  std::vector<float> shard(static_cast<size_t>(R * Vr)), gathered(logits.values.size());
  ops::linear(y.data(), R, weights_.head, shard.data());
  comm_->all_gather(shard.data(), shard.size(), gathered.data());  // [N, R, Vr]
  for (int64_t r = 0; r < N; ++r)
    for (int64_t row = 0; row < R; ++row)
      std::copy_n(gathered.begin() + (r * R + row) * Vr, Vr,
                  logits.values.begin() + row * V + r * Vr);
  return logits;
}

}  // namespace tessera::dsv4
