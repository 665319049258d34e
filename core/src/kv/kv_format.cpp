#include "kv/kv_format.hpp"

#include <cstddef>
#include <utility>

#include "util/check.hpp"

namespace tessera {

KvFormat::KvFormat(PluginInstance instance, int32_t main_dim, int32_t rope_dim, int32_t index_dim,
                   int32_t entries_per_page)
    : instance_(std::move(instance)) {
  table_ = &instance_.table<ts_kv_cache_table>();
  instance_.check(
      table_->describe(instance_.get(), TS_KV_MAIN, main_dim, rope_dim, entries_per_page, &main_),
      "describe(main)");
  if (index_dim > 0) {
    instance_.check(table_->describe(instance_.get(), TS_KV_INDEXER, index_dim, index_dim,
                                     entries_per_page, &indexer_),
                    "describe(indexer)");
  }
  TS_CHECK(main_.page_bytes > 0 && main_.entries_per_page == entries_per_page,
           "kv format {}: describe(main) returned an unusable layout (page_bytes {}, entries {})",
           name(), main_.page_bytes, main_.entries_per_page);
}

bool KvFormat::stores_without_waiting() const {
  return table_->struct_size >= offsetof(ts_kv_cache_table, store_async) + sizeof(void*) &&
         table_->store_async != nullptr;
}

void KvFormat::store(const ts_kv_layout& layout, const float* rows, std::span<const int64_t> slots,
                     uint8_t* pool, ts_device device, int64_t* first_bad_row) const {
  if (slots.empty()) {
    return;
  }
  if (first_bad_row != nullptr && device.type == TS_DEVICE_CUDA && stores_without_waiting()) {
    instance_.check(
        table_->store_async(instance_.get(), &layout, rows, static_cast<int64_t>(slots.size()),
                            slots.data(), pool, device, first_bad_row),
        "store");
    return;
  }
  instance_.check(table_->store(instance_.get(), &layout, rows, static_cast<int64_t>(slots.size()),
                                slots.data(), pool, device),
                  "store");
}

bool KvFormat::stores_from_device_slots() const {
  return table_->struct_size >= offsetof(ts_kv_cache_table, store_device_slots) + sizeof(void*) &&
         table_->store_device_slots != nullptr;
}

void KvFormat::store_device_slots(const ts_kv_layout& layout, const float* rows, int64_t n,
                                  const int64_t* slots, uint8_t* pool, ts_device device,
                                  int64_t* first_bad_row) const {
  TS_CHECK(stores_from_device_slots(), "kv format {} has no store_device_slots (ABI 1.6)", name());
  if (n == 0) {
    return;
  }
  instance_.check(table_->store_device_slots(instance_.get(), &layout, rows, n, slots, pool, device,
                                             first_bad_row),
                  "store_device_slots");
}

void KvFormat::load(const ts_kv_layout& layout, const uint8_t* pool, std::span<const int64_t> slots,
                    float* rows, ts_device device) const {
  if (slots.empty()) {
    return;
  }
  instance_.check(table_->load(instance_.get(), &layout, pool, slots.data(),
                               static_cast<int64_t>(slots.size()), rows, device),
                  "load");
}

ts_kv_reader KvFormat::reader() const {
  return ts_kv_reader{instance_.get(), table_, &main_, &indexer_};
}

}  // namespace tessera
