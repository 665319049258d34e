// What one model step runs: a chunk of new tokens for each of several sequences. Rows of every
// activation tensor are the concatenation of the chunks, in order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/sequence_kv.hpp"

namespace tessera::dsv4 {

// A forward's per-token passes (norms, RoPE, mHC, copies) run over the compute threads in chunks
// of at least this many tokens (ops::for_each_row_chunk); each token alone, so with the same bits
// on any thread.
inline constexpr int64_t kMinTokensPerChunk = 8;

struct SequenceChunk {
  SequenceKv* kv = nullptr;         // its length() is the position of tokens[0]
  std::span<const int32_t> tokens;  // new tokens of this step
  bool all_logits = false;          // logits for every token (parity, scoring) or the last only
};

struct ForwardBatch {
  std::vector<SequenceChunk> chunks;
  int64_t total_tokens() const {
    int64_t n = 0;
    for (const auto& c : chunks) {
      n += static_cast<int64_t>(c.tokens.size());
    }
    return n;
  }
};

// Per-step counters (tests and metrics): indexer entries scored, etc.
struct ForwardStats {
  int64_t indexer_entries_scored = 0;
  // When set, the residual streams [T, hc_mult, D] after every block are kept here (parity
  // debugging: compare layer by layer with transformers' hidden states).
  bool capture_streams = false;
  std::vector<std::vector<float>> layer_streams;
};

}  // namespace tessera::dsv4
