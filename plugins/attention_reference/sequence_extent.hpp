// What of the cache one sequence of a batch reads (the reference backend's CPU and device paths).
#pragma once

#include <algorithm>
#include <cstdint>

#include "tessera/plugin_abi.h"

namespace tessera::reference {

struct SequenceExtent {
  int64_t last_position;
  int64_t n_window;      // window rows to decode (from window_first_position)
  int64_t n_compressed;  // compressed entries visible to the last query
};

inline SequenceExtent extent_of(const ts_attention_layer& layer, const ts_attention_sequence& seq) {
  SequenceExtent e{};
  e.last_position = seq.first_position + seq.n_queries - 1;
  e.n_window = e.last_position - seq.window_first_position + 1;
  e.n_compressed = 0;
  if (layer.compress_ratio > 0) {
    e.n_compressed =
        std::min<int64_t>(seq.n_compressed, (e.last_position + 1) / layer.compress_ratio);
  }
  return e;
}

}  // namespace tessera::reference
