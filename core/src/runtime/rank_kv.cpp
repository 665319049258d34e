#include "runtime/rank_kv.hpp"

#include <cmath>

#include "device/plugin_device.hpp"
#include "util/check.hpp"

namespace tessera {

RankKv create_rank_kv(PluginRegistry& registry, const RuntimeOptions& options,
                      const dsv4::ModelConfig& config, device::Device* device,
                      const device::Stream* stream) {
  const bool on_device = device != nullptr && device->kind() == device::DeviceKind::kCuda;
  TS_CHECK(!on_device || stream != nullptr, "create_rank_kv: a CUDA device needs a stream");
  const ts_device where =
      on_device ? device::plugin_device(*device, *stream) : device::kHostPluginDevice;
  RankKv kv;
  kv.format = std::make_unique<KvFormat>(
      registry.create(registry.find(TS_KIND_KV_CACHE, options.kv_plugin), options.kv_options_json,
                      where),
      static_cast<int32_t>(config.head_dim), static_cast<int32_t>(config.rope_dim),
      static_cast<int32_t>(config.index_head_dim), static_cast<int32_t>(options.page_size));
  kv.attention = registry.create(registry.find(TS_KIND_ATTENTION, options.attention_plugin),
                                 options.attention_options_json, where);

  const int64_t max_context =
      options.max_context > 0 ? options.max_context : config.max_position_embeddings;
  const auto budget = static_cast<uint64_t>(std::llround(options.memory_gib * (1ull << 30)));
  const ts_kv_layout& main = kv.format->main_layout();
  const ts_kv_layout& idx = kv.format->indexer_layout();
  kv.plan = plan_kv_memory(config, main, idx, budget, max_context);
  const uint64_t idx_page_bytes = idx.page_bytes > 0 ? idx.page_bytes : main.page_bytes;
  if (!on_device) {
    kv.pools = std::make_unique<KvPools>(
        KvPools{PagePool(main.page_bytes, main.entries_per_page, kv.plan.main_pages),
                PagePool(idx_page_bytes, main.entries_per_page, kv.plan.indexer_pages)});
    return kv;
  }
  const auto place = [&](uint64_t page_bytes, int64_t pages, device::DeviceBuffer& bytes) {
    const auto size = static_cast<size_t>(page_bytes * static_cast<uint64_t>(pages));
    bytes = device->allocate(size);
    device->fill(bytes.data(), 0, size, *stream);
    return PageStorage{bytes.as<uint8_t>(),
                       [device, stream](uint8_t* dst, const uint8_t* src, uint64_t n) {
                         device->copy(dst, src, n, device::CopyKind::kDeviceToDevice, *stream);
                       }};
  };
  kv.pools = std::make_unique<KvPools>(
      KvPools{PagePool(main.page_bytes, main.entries_per_page, kv.plan.main_pages,
                       place(main.page_bytes, kv.plan.main_pages, kv.main_bytes)),
              PagePool(idx_page_bytes, main.entries_per_page, kv.plan.indexer_pages,
                       place(idx_page_bytes, kv.plan.indexer_pages, kv.indexer_bytes))});
  return kv;
}

}  // namespace tessera
