// The device forward's compressor state (model/device_compressors.hpp): for each compressor of
// each layer, one ring per slot holding a sequence's last windows of projected rows, kv and gate
// (ape added), each [windows * m, width]; windows = 2 when m == 4 (an overlapping window reads
// the previous one), else 1; width = 2d when m == 4, else d. Position p of the sequence holding
// slot s is row s * windows * m + (p / m % windows) * m + p % m.
//
// A sequence takes a slot at its first device step and gives it back when it is reset or
// destroyed (kv/sequence_kv.hpp). The rings' bytes are part of the kv cache's budget
// (runtime/rank_kv.hpp). The host forward keeps the same state in CompressorState instead.
// Not thread-safe: owned by one rank's thread.
#pragma once

#include <cstdint>
#include <vector>

#include "weights/dsv4_config.hpp"

namespace tessera {

class CompressorRings {
 public:
  struct Ring {
    float* kv = nullptr;    // [slots * rows, width]
    float* gate = nullptr;  // [slots * rows, width]
    int64_t rows = 0;       // per slot: windows * m
    int64_t width = 0;
  };

  CompressorRings() = default;  // no slots (the host forward)
  // storage: bytes(config, slots) bytes of the device's memory, outliving the rings.
  CompressorRings(const dsv4::ModelConfig& config, int64_t slots, float* storage);

  // Windows a slot keeps of a ratio-m compressor, and the row of position p of slot `slot`.
  [[nodiscard]] static int64_t windows(int64_t m) { return m == 4 ? 2 : 1; }
  [[nodiscard]] static int64_t row(int64_t slot, int64_t p, int64_t m) {
    return slot * windows(m) * m + (p / m % windows(m)) * m + p % m;
  }

  // The bytes `slots` slots take for every compressor of `config`.
  [[nodiscard]] static uint64_t bytes(const dsv4::ModelConfig& config, int64_t slots);

  // A free slot, or -1 when every slot is held.
  [[nodiscard]] int32_t take();
  void give(int32_t slot);

  // Layer `layer`'s main compressor's ring, or its indexer's (CSA layers).
  [[nodiscard]] const Ring& ring(int64_t layer, bool indexer) const;
  [[nodiscard]] int64_t slots() const { return slots_; }
  [[nodiscard]] int64_t free_slots() const { return static_cast<int64_t>(free_.size()); }

 private:
  int64_t slots_ = 0;
  std::vector<Ring> rings_;    // [layers][main, indexer]
  std::vector<int32_t> free_;  // stack of free slots
  std::vector<bool> held_;     // double-give guard
};

}  // namespace tessera
