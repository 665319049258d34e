// A kv-cache format plugin instance with the two layouts the model needs (main 512-d latent
// entries with a rope tail, and indexer keys), resolved once at start-up.
#pragma once

#include <cstdint>
#include <span>

#include "device/plugin_device.hpp"
#include "tessera/plugin_abi.h"
#include "util/plugin_instance.hpp"

namespace tessera {

class KvFormat {
 public:
  KvFormat(PluginInstance instance, int32_t main_dim, int32_t rope_dim, int32_t index_dim,
           int32_t entries_per_page);

  const ts_kv_layout& main_layout() const { return main_; }
  const ts_kv_layout& indexer_layout() const { return indexer_; }
  const char* name() const { return instance_.name(); }

  // rows [n, layout.dim] -> slots. Throws tessera::Error with the plugin's message. For a CUDA
  // `device` rows and pool are its memory and the work is enqueued on its stream (plugin_abi.h).
  // Given `first_bad_row` (device memory, set to n or more) and a format with store_async
  // (ABI 1.4), a CUDA store does not wait for the stream: a non-finite row is left unwritten and
  // its index min-reduced there, for the caller to read after synchronising.
  void store(const ts_kv_layout& layout, const float* rows, std::span<const int64_t> slots,
             uint8_t* pool, ts_device device = device::kHostPluginDevice,
             int64_t* first_bad_row = nullptr) const;
  // Whether store can take first_bad_row on a CUDA device (the format has store_async).
  [[nodiscard]] bool stores_without_waiting() const;
  // Whether the format stores from slots in the device's memory (ABI 1.6 store_device_slots).
  [[nodiscard]] bool stores_from_device_slots() const;
  // rows [n, layout.dim] -> slots [n] in the device's memory (a negative slot: a padding row, not
  // written). On a CUDA device only kernels are enqueued (a CUDA graph may hold them): a
  // non-finite row is left unwritten and its index min-reduced into first_bad_row (device
  // memory). On the CPU a non-finite row throws, as store. Precondition: stores_from_device_slots.
  void store_device_slots(const ts_kv_layout& layout, const float* rows, int64_t n,
                          const int64_t* slots, uint8_t* pool, ts_device device,
                          int64_t* first_bad_row) const;
  void load(const ts_kv_layout& layout, const uint8_t* pool, std::span<const int64_t> slots,
            float* rows, ts_device device = device::kHostPluginDevice) const;

  // What an attention backend needs to read this format.
  ts_kv_reader reader() const;

 private:
  PluginInstance instance_;
  const ts_kv_cache_table* table_ = nullptr;
  ts_kv_layout main_{};
  ts_kv_layout indexer_{};
};

}  // namespace tessera
