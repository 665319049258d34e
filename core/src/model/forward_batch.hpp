// What one model step runs: a chunk of new tokens for each of several sequences. Rows of every
// activation tensor are the concatenation of the chunks, in order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/sequence_kv.hpp"

namespace tessera::device {
class StepTimeline;
}  // namespace tessera::device

namespace tessera::dsv4 {

// A forward's per-token passes (norms, RoPE, mHC, copies) run over the compute threads in chunks
// of at least this many tokens (ops::for_each_row_chunk); each token alone, so with the same bits
// on any thread.
inline constexpr int64_t kMinTokensPerChunk = 8;

struct SequenceChunk {
  SequenceKv* kv = nullptr;         // its length() is the position of tokens[0]
  std::span<const int32_t> tokens;  // new tokens of this step
  bool all_logits = false;          // logits for every token (parity, scoring) or the last only
  // Its row is wanted for its scan only (a greedy row, or one not sampled): a device forward
  // copies back no values for it (Logits::row gives null). Ignored with all_logits.
  bool scan_only = false;
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

// Takes the window-cache slot of every row of the step at `layer` (token order, the row's
// position in `positions`) into out[0, T): the pages the new tokens' kv go to.
inline void take_window_slots(const ForwardBatch& batch, std::span<const int64_t> positions,
                              int64_t layer, int64_t* out) {
  for (int64_t row = 0; const SequenceChunk& chunk : batch.chunks) {
    for (size_t i = 0; i < chunk.tokens.size(); ++i, ++row) {
      out[row] = chunk.kv->write_window_slot(layer, positions[static_cast<size_t>(row)]);
    }
  }
}

// The batch rows (token order) that get logits: the last of each chunk, or all of a chunk's when
// it asks for all; chunk_rows receives each chunk's first logits row.
inline std::vector<int64_t> logit_rows(const ForwardBatch& batch,
                                       std::vector<int64_t>& chunk_rows) {
  std::vector<int64_t> rows;
  for (int64_t row = 0; const SequenceChunk& c : batch.chunks) {
    const auto len = static_cast<int64_t>(c.tokens.size());
    chunk_rows.push_back(static_cast<int64_t>(rows.size()));
    if (c.all_logits) {
      for (int64_t i = 0; i < len; ++i) {
        rows.push_back(row + i);
      }
    } else {
      rows.push_back(row + len - 1);
    }
    row += len;
  }
  return rows;
}

// Per-step counters (tests and metrics): indexer entries scored, etc.
struct ForwardStats {
  int64_t indexer_entries_scored = 0;
  // When set, the residual streams [T, hc_mult, D] after every block are kept here (parity
  // debugging: compare layer by layer with transformers' hidden states).
  bool capture_streams = false;
  std::vector<std::vector<float>> layer_streams;
  // When set, the device forward marks its blocks on it (benchmarks; the host forward ignores it).
  device::StepTimeline* timeline = nullptr;
};

}  // namespace tessera::dsv4
