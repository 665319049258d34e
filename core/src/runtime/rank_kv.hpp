// RankKv: one rank's kv-cache side — its kv-cache format and attention plugin instances, the
// split of the cache memory between the two page pools, and the pools. The Runtime creates rank
// 0's; the tensor-parallel Executor creates one more per other rank from the same options, so
// every rank holds the same pools (each keeps the whole latent cache of its sequences).
// Destroy the pools' SequenceKv and snapshots, and the model reading them, before the RankKv.
#pragma once

#include <memory>

#include "device/device.hpp"
#include "kv/kv_format.hpp"
#include "kv/memory_planner.hpp"
#include "kv/sequence_kv.hpp"
#include "plugins/registry.hpp"
#include "runtime/runtime_options.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera {

struct RankKv {
  std::unique_ptr<KvFormat> format;
  PluginInstance attention;
  KvPlan plan;
  device::DeviceBuffer main_bytes, indexer_bytes;  // the pools' pages on a CUDA device
  device::DeviceBuffer ring_bytes;                 // the compressor rings on any device
  std::unique_ptr<KvPools> pools;
};

// Creates options.kv_plugin and options.attention_plugin through `registry` and splits
// options.memory_gib between the pools for sequences of options.max_context tokens (0: the
// model's max_position_embeddings). Without a device (or with the cpu one) the plugins run on the
// host and the pools' pages are host memory; with a CUDA device the plugins are created for it and
// `stream`, and the pages are its memory (zeroed; copy-on-write copies on `stream`). With any
// device (the device forward) the compressor rings for options.max_running_sequences sequences
// are taken from the same budget, in the device's memory.
// The bytes options.memory_gib asks of each rank for its page pools.
[[nodiscard]] uint64_t kv_pool_bytes(const RuntimeOptions& options);

RankKv create_rank_kv(PluginRegistry& registry, const RuntimeOptions& options,
                      const dsv4::ModelConfig& config, device::Device* device = nullptr,
                      const device::Stream* stream = nullptr);

}  // namespace tessera
