#include "kv/compressor_rings.hpp"

#include "util/check.hpp"

namespace tessera {
namespace {

// Rows per slot and row width of layer `layer`'s compressor (0 rows: none).
CompressorRings::Ring shape(const dsv4::ModelConfig& config, int64_t layer, bool indexer) {
  const int64_t m = config.compress_ratio(layer);
  if (m == 0 || (indexer && m != 4)) {
    return {};
  }
  const int64_t d = indexer ? config.index_head_dim : config.head_dim;
  return {nullptr, nullptr, CompressorRings::windows(m) * m, (m == 4 ? 2 : 1) * d};
}

}  // namespace

uint64_t CompressorRings::bytes(const dsv4::ModelConfig& config, int64_t slots) {
  uint64_t floats = 0;
  for (int64_t l = 0; l < config.num_layers; ++l) {
    for (const bool indexer : {false, true}) {
      const Ring r = shape(config, l, indexer);
      floats += static_cast<uint64_t>(2 * slots * r.rows * r.width);  // kv and gate
    }
  }
  return floats * sizeof(float);
}

CompressorRings::CompressorRings(const dsv4::ModelConfig& config, int64_t slots, float* storage)
    : slots_(slots), held_(static_cast<size_t>(slots), false) {
  TS_CHECK(slots >= 0 && slots < (int64_t{1} << 31), "compressor rings: {} slots", slots);
  TS_CHECK(storage != nullptr || bytes(config, slots) == 0, "compressor rings: no storage");
  float* next = storage;
  for (int64_t l = 0; l < config.num_layers; ++l) {
    for (const bool indexer : {false, true}) {
      Ring& r = rings_.emplace_back(shape(config, l, indexer));
      const int64_t floats = slots * r.rows * r.width;
      if (floats > 0) {
        r.kv = next;
        r.gate = next + floats;
        next += 2 * floats;
      }
    }
  }
  for (int64_t s = slots - 1; s >= 0; --s) {
    free_.push_back(static_cast<int32_t>(s));
  }
}

int32_t CompressorRings::take() {
  if (free_.empty()) {
    return -1;
  }
  const int32_t slot = free_.back();
  free_.pop_back();
  held_[static_cast<size_t>(slot)] = true;
  return slot;
}

void CompressorRings::give(int32_t slot) {
  TS_CHECK(slot >= 0 && slot < slots_ && held_[static_cast<size_t>(slot)],
           "compressor rings: slot {} given back but not held ({} slots)", slot, slots_);
  held_[static_cast<size_t>(slot)] = false;
  free_.push_back(slot);
}

const CompressorRings::Ring& CompressorRings::ring(int64_t layer, bool indexer) const {
  const size_t i = static_cast<size_t>(layer) * 2 + (indexer ? 1 : 0);
  TS_CHECK(i < rings_.size() && rings_[i].rows > 0, "compressor rings: layer {} has no {} ring",
           layer, indexer ? "indexer" : "main");
  return rings_[i];
}

}  // namespace tessera
