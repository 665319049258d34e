#include "runtime/rank_kv.hpp"

#include <cmath>

namespace tessera {

RankKv create_rank_kv(PluginRegistry& registry, const RuntimeOptions& options,
                      const dsv4::ModelConfig& config) {
  constexpr ts_device kCpu{TS_DEVICE_CPU, 0, nullptr};
  RankKv kv;
  kv.format = std::make_unique<KvFormat>(
      registry.create(registry.find(TS_KIND_KV_CACHE, options.kv_plugin), options.kv_options_json,
                      kCpu),
      static_cast<int32_t>(config.head_dim), static_cast<int32_t>(config.rope_dim),
      static_cast<int32_t>(config.index_head_dim), static_cast<int32_t>(options.page_size));
  kv.attention = registry.create(registry.find(TS_KIND_ATTENTION, options.attention_plugin),
                                 options.attention_options_json, kCpu);

  const int64_t max_context =
      options.max_context > 0 ? options.max_context : config.max_position_embeddings;
  const auto budget = static_cast<uint64_t>(std::llround(options.memory_gib * (1ull << 30)));
  const ts_kv_layout& main = kv.format->main_layout();
  const ts_kv_layout& idx = kv.format->indexer_layout();
  kv.plan = plan_kv_memory(config, main, idx, budget, max_context);
  kv.pools = std::make_unique<KvPools>(
      KvPools{PagePool(main.page_bytes, main.entries_per_page, kv.plan.main_pages),
              PagePool(idx.page_bytes > 0 ? idx.page_bytes : main.page_bytes, main.entries_per_page,
                       kv.plan.indexer_pages)});
  return kv;
}

}  // namespace tessera
