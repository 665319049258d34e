// One compressor (main or indexer) over a step's tokens, on the host (kv/compressor_state.hpp):
// every token's kv and gate rows pushed into its sequence's state, each closed window's entry
// normalised, rotated at its window start k*m, and given its cache slot. The caller stores the
// entries through the kv format. The host forward runs it; the device forward keeps the same
// state on the device (model/device_compressors.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "model/forward_batch.hpp"
#include "ops/rope.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

// A compressor's host-side weights: ape [m, width] and the entry norm [dim], fp32.
struct CompressorHostWeights {
  const float* ape = nullptr;
  const float* norm = nullptr;
  int64_t width = 0;  // c * d
  int64_t dim = 0;    // d
};

struct CompressedEntries {
  std::vector<float> rows;     // [n, dim], batch order
  std::vector<int64_t> slots;  // [n]: the main cache's (appended) or the indexer's
};

// kv, gate: [T, width] host memory (gate receives ape[p % m] in place). Sequences run in
// parallel on the compute threads, each one's tokens in order; slots are then taken on this
// thread in batch order (the page pools are not thread-safe), so pages and bytes are the same as
// a serial run's. The main compressor must run before the indexer's: append_compressed (main)
// allocates the indexer slot too.
CompressedEntries compress_tokens(const ModelConfig& config, int64_t layer,
                                  const CompressorHostWeights& w, const ops::RopeTable& rope,
                                  const ForwardBatch& batch, const std::vector<int64_t>& positions,
                                  const float* kv, float* gate, bool is_indexer);

}  // namespace tessera::dsv4
