// Sizes the two page pools (main latent entries, indexer keys) from the memory budget and the kv
// format's declared layout, so a denser format holds proportionally more tokens in the same bytes.
#pragma once

#include <cstdint>

#include "tessera/plugin_abi.h"
#include "weights/dsv4_config.hpp"

namespace tessera {

struct KvPlan {
  int64_t main_pages = 0;
  int64_t indexer_pages = 0;
  uint64_t bytes = 0;       // what the two pools take
  uint64_t ring_bytes = 0;  // the compressor rings taken from the budget first (device forward)
  // Steady-state cache bytes per context token (compressed entries + indexer keys; the fixed
  // window is per sequence) and the context tokens the budget holds at that rate.
  double bytes_per_token = 0;
  int64_t token_capacity = 0;
};

// Splits budget_bytes between the pools in proportion to one max_context sequence's demand.
KvPlan plan_kv_memory(const dsv4::ModelConfig& config, const ts_kv_layout& main,
                      const ts_kv_layout& indexer, uint64_t budget_bytes, int64_t max_context);

}  // namespace tessera
