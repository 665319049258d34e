// What the attention plugin is told about one layer of a step (plugin_abi.h): the layer's shape
// and every sequence's queries and cache slots (window, compressed entries, indexer keys). Built
// once per layer by the host forward and the device forward alike; the slot lists are host
// memory on every device (plugin_abi.h, ts_device).
#pragma once

#include <cstdint>
#include <vector>

#include "model/forward_batch.hpp"
#include "tessera/plugin_abi.h"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

class AttentionBatch {
 public:
  // heads: this rank's query heads; attn_sink [heads] fp32 in the memory of the plugin's device.
  AttentionBatch(const ModelConfig& config, int64_t layer, int64_t heads, const float* attn_sink,
                 const ForwardBatch& batch, const std::vector<int64_t>& positions);
  AttentionBatch(const AttentionBatch&) = delete;  // the descriptions point into the lists
  AttentionBatch& operator=(const AttentionBatch&) = delete;

  const ts_attention_layer& layer() const { return layer_; }
  const ts_attention_batch& batch() const { return batch_; }

 private:
  std::vector<ts_attention_sequence> seqs_;
  std::vector<std::vector<int64_t>> window_slots_, comp_slots_, idx_slots_;
  ts_attention_layer layer_{};
  ts_attention_batch batch_{};
};

}  // namespace tessera::dsv4
