// What every rank does in one step, decided by rank 0 (the engine loop) and broadcast to the
// others: cache operations (create / restore / free sequences, drop prefix snapshots), then one
// forward over chunks of new tokens. Ranks apply the operations in order on their own page pools;
// since pools start equal and allocation is deterministic, every rank's pages stay identical.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera {

enum class CacheOpKind : uint8_t {
  kCreate = 0,        // new empty SequenceKv `sequence`
  kRestore = 1,       // new SequenceKv `sequence` from prefix snapshot `snapshot`
  kFree = 2,          // destroy `sequence` (its pages go back unless shared)
  kDropSnapshot = 3,  // destroy prefix snapshot `snapshot`
};

struct CacheOp {
  CacheOpKind kind = CacheOpKind::kCreate;
  uint64_t sequence = 0;
  uint64_t snapshot = 0;
};

// After the forward, the sequence's cache state at `length` becomes prefix snapshot `snapshot`.
struct SnapshotPoint {
  int64_t length = 0;
  uint64_t snapshot = 0;
};

struct PlannedChunk {
  uint64_t sequence = 0;
  std::vector<int32_t> tokens;  // at positions length() .. length() + size - 1
  std::vector<SnapshotPoint> snapshots;
  bool scan_only = false;  // dsv4::SequenceChunk::scan_only
};

struct StepPlan {
  bool shutdown = false;
  std::vector<CacheOp> ops;
  std::vector<PlannedChunk> chunks;
};

std::vector<uint8_t> serialize_plan(const StepPlan& plan);
// Throws tessera::Error on truncated or malformed bytes.
StepPlan deserialize_plan(std::span<const uint8_t> bytes);

}  // namespace tessera
