#include "runtime/rank_kv.hpp"

#include <cmath>
#include <string>

#include "device/plugin_device.hpp"
#include "util/check.hpp"

namespace tessera {
namespace {

std::string dtype_of(const char (&name)[16]) { return std::string(name, strnlen(name, 16)); }

// Whether the capabilities array `key` (of strings) holds `value` or "any"; true when there is
// no such array.
bool allows(const nlohmann::json& caps, const char* key, const std::string& value) {
  const auto it = caps.find(key);
  if (it == caps.end() || !it->is_array()) return true;
  for (const auto& v : *it)
    if (v.is_string() && (v.get<std::string>() == value || v.get<std::string>() == "any"))
      return true;
  return false;
}

// Refuses at start-up an attention plugin that declares which kv-cache formats
// ("kv_formats": plugin names) or payload dtypes ("kv_payload_dtypes") it reads, paired with a
// cache it does not: the message names both plugins and what each side has.
void check_pair(const LoadedPlugin& attention, const LoadedPlugin& kv, const KvFormat& format) {
  const nlohmann::json& caps = attention.capabilities;
  const std::string kv_name(kv.name()), attention_name(attention.name());
  if (!allows(caps, "kv_formats", kv_name))
    throw Error("attention plugin `" + attention_name + "` reads the kv-cache formats " +
                caps["kv_formats"].dump() + "; kv_cache.plugin `" + kv_name +
                "` is not one of them: choose one of those, or attention `reference`");
  for (const ts_kv_layout* layout : {&format.main_layout(), &format.indexer_layout()}) {
    const std::string payload = dtype_of(layout->payload_dtype);
    if (!allows(caps, "kv_payload_dtypes", payload))
      throw Error("attention plugin `" + attention_name + "` reads kv payloads " +
                  caps["kv_payload_dtypes"].dump() + "; kv_cache `" + kv_name +
                  "` with these options stores '" + payload + "' (storage = \"fp32\" is for " +
                  "parity tests with attention `reference`)");
  }
}

// The compressor rings' slots in the device's memory (never read before written: a slot's rows
// are written by a sequence's step before a later step reads them).
void place_rings(const dsv4::ModelConfig& config, int64_t slots, device::Device& device,
                 RankKv& kv) {
  const uint64_t bytes = CompressorRings::bytes(config, slots);
  if (bytes > 0) {
    kv.ring_bytes = device.allocate(static_cast<size_t>(bytes));
  }
  kv.pools->rings = CompressorRings(config, slots, kv.ring_bytes.as<float>());
}

}  // namespace

uint64_t kv_pool_bytes(const RuntimeOptions& options) {
  return static_cast<uint64_t>(std::llround(options.memory_gib * (1ull << 30)));
}

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
  const LoadedPlugin& attention = registry.find(TS_KIND_ATTENTION, options.attention_plugin);
  check_pair(attention, registry.find(TS_KIND_KV_CACHE, options.kv_plugin), *kv.format);
  kv.attention = registry.create(attention, options.attention_options_json, where);

  const int64_t max_context =
      options.max_context > 0 ? options.max_context : config.max_position_embeddings;
  uint64_t budget = kv_pool_bytes(options);
  const int64_t ring_slots = device != nullptr ? options.max_running_sequences : 0;
  const uint64_t ring_bytes = CompressorRings::bytes(config, ring_slots);
  TS_CHECK(ring_bytes < budget,
           "kv_cache.memory_gib ({:.3f} GiB) does not hold the compressors' state of "
           "scheduler.max_running_sequences = {} sequences on the device ({:.3f} GiB) and pages "
           "besides: raise the one or lower the other",
           options.memory_gib, ring_slots, static_cast<double>(ring_bytes) / (1ull << 30));
  budget -= ring_bytes;
  const ts_kv_layout& main = kv.format->main_layout();
  const ts_kv_layout& idx = kv.format->indexer_layout();
  kv.plan = plan_kv_memory(config, main, idx, budget, max_context);
  kv.plan.ring_bytes = ring_bytes;
  const uint64_t idx_page_bytes = idx.page_bytes > 0 ? idx.page_bytes : main.page_bytes;
  if (!on_device) {
    kv.pools = std::make_unique<KvPools>(
        KvPools{PagePool(main.page_bytes, main.entries_per_page, kv.plan.main_pages),
                PagePool(idx_page_bytes, main.entries_per_page, kv.plan.indexer_pages)});
    if (device != nullptr) {
      place_rings(config, ring_slots, *device, kv);
    }
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
  place_rings(config, ring_slots, *device, kv);
  return kv;
}

}  // namespace tessera
