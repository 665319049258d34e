// kv-cache format "bf16": the unquantized latent cache. Each entry is its `dim` values rounded to
// bfloat16 (round-to-nearest-even), stored as one contiguous record; no scales. Main entries take
// 512 x 2 = 1024 B, indexer keys 128 x 2 = 256 B (DSV4.md §4, sglang's unified bf16 layout).
//
// Page layout (entries_per_page records, token-major):
//   [ e0: payload (dim - rope_dim) bf16 | rope (rope_dim) bf16 ][ e1 ... ] ...
//
// Option `storage = "fp32"` keeps the values unrounded (4 B each): the exact cache that parity
// tests against fp32 references (transformers) need. It is not a serving format.
//
// CUDA devices: rows and pool in device memory, slots in host memory (plugin_abi.h, ts_device).
// The kernels live in the plugin's CUDA module (cuda/, opened on the first CUDA call) and write
// the same bytes as the CPU path; plugins/common/kv_cuda_path.hpp does the rest (the refusal of
// non-finite input, with the same message, before anything is written).
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bf16_cuda_api.h"
#include "kv_cuda_path.hpp"
#include "kv_padding_rows.hpp"
#include "tessera/finite_values.hpp"
#include "tessera/plugin_sdk.hpp"
#include "tessera/simd_clones.hpp"

namespace {

using tessera::sdk::fail;
using tessera::sdk::ok;

using CudaPath = tessera::sdk::KvCudaPath<ts_bf16_cuda_api, ts_bf16_records>;

struct Bf16Cache {
  tessera::sdk::Logger log;
  bool fp32 = false;               // storage = "fp32"
  std::unique_ptr<CudaPath> cuda;  // its module is opened on the first call with a CUDA device
};

Bf16Cache& cache(ts_instance* self) { return tessera::sdk::self<Bf16Cache>(self); }

// fp32 -> bf16 with round-to-nearest-even on the dropped 16 bits (inputs are finite here).
uint16_t to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float from_bf16(uint16_t half) {
  const uint32_t bits = static_cast<uint32_t>(half) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

void copy_name(char (&dst)[16], const char* src) {
  std::memset(dst, 0, sizeof dst);
  std::strncpy(dst, src, sizeof dst - 1);
}

ts_status describe(ts_instance* self, int32_t stream, int32_t dim, int32_t rope_dim,
                   int32_t entries_per_page, ts_kv_layout* out) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (out == nullptr) {
      return fail(TS_ERR_INVALID_ARGUMENT, "describe: out is null");
    }
    if (stream != TS_KV_MAIN && stream != TS_KV_INDEXER) {
      return fail(TS_ERR_INVALID_ARGUMENT, "describe: unknown stream " + std::to_string(stream));
    }
    if (dim <= 0 || rope_dim < 0 || rope_dim > dim || entries_per_page <= 0) {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "describe: need dim > 0, 0 <= rope_dim <= dim, entries_per_page > 0 (got dim " +
                      std::to_string(dim) + ", rope_dim " + std::to_string(rope_dim) +
                      ", entries_per_page " + std::to_string(entries_per_page) + ")");
    }
    ts_kv_layout layout{};
    layout.struct_size = sizeof(ts_kv_layout);
    layout.stream = stream;
    layout.dim = dim;
    layout.rope_dim = rope_dim;
    layout.entries_per_page = entries_per_page;
    const uint64_t value_bytes = cache(self).fp32 ? 4 : 2;
    layout.bytes_per_entry = static_cast<uint64_t>(dim) * value_bytes;
    layout.page_bytes = layout.bytes_per_entry * static_cast<uint64_t>(entries_per_page);
    layout.payload_offset = 0;
    layout.payload_stride = layout.bytes_per_entry;
    layout.rope_offset = static_cast<uint64_t>(dim - rope_dim) * value_bytes;
    layout.rope_stride = layout.bytes_per_entry;
    layout.scale_offset = 0;
    layout.scale_stride = 0;
    copy_name(layout.payload_dtype, cache(self).fp32 ? "fp32" : "bf16");
    copy_name(layout.rope_dtype, cache(self).fp32 ? "fp32" : "bf16");
    copy_name(layout.scale_dtype, "");
    *out = layout;
    return ok();
  });
}

uint8_t* record(uint8_t* pool, const ts_kv_layout& l, int64_t slot) {
  const int64_t page = slot / l.entries_per_page;
  const int64_t entry = slot % l.entries_per_page;
  return pool + page * l.page_bytes + l.payload_offset + entry * l.payload_stride;
}

ts_status check_call(const ts_kv_layout* layout, const int64_t* slots, int64_t n, ts_device device,
                     const void* rows, const void* pool) {
  if (layout == nullptr || (n > 0 && (slots == nullptr || rows == nullptr || pool == nullptr))) {
    return fail(TS_ERR_INVALID_ARGUMENT, "layout, slots, rows or pool is null");
  }
  if (n < 0) {
    return fail(TS_ERR_INVALID_ARGUMENT, "negative row count " + std::to_string(n));
  }
  if (device.type != TS_DEVICE_CPU && device.type != TS_DEVICE_CUDA) {
    return fail(TS_ERR_UNSUPPORTED, "the bf16 cache plugin runs on CPU and CUDA devices only");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (slots[i] < 0) {
      return fail(TS_ERR_INVALID_ARGUMENT, "negative slot at index " + std::to_string(i));
    }
  }
  return ok();
}

// sdk::all_finite compiled for the widest vectors (a step stores 64 rows per layer).
TS_SIMD_CLONES bool rows_finite(const float* values, int64_t n) {
  return tessera::sdk::all_finite(values, n);
}

// One entry's values rounded to bf16 (to_bf16, vectorised).
TS_SIMD_CLONES void narrow_bf16(const float* src, uint8_t* dst, int64_t dim) {
  for (int64_t c = 0; c < dim; ++c) {
    const uint16_t h = to_bf16(src[c]);
    std::memcpy(dst + 2 * c, &h, 2);
  }
}

ts_status refuse_non_finite(const float* rows, int64_t n, int64_t dim) {
  const int64_t i = tessera::sdk::first_non_finite(rows, n * dim);
  return fail(TS_ERR_NUMERIC, "store: non-finite value in row " + std::to_string(i / dim) +
                                  ", channel " + std::to_string(i % dim));
}

ts_bf16_records records_of(const Bf16Cache& impl, const ts_kv_layout& l) {
  return ts_bf16_records{l.dim,
                         l.entries_per_page,
                         l.page_bytes,
                         l.payload_offset,
                         l.payload_stride,
                         impl.fp32 ? 4 : 2};
}

ts_status store(ts_instance* self, const ts_kv_layout* layout, const float* rows, int64_t n,
                const int64_t* slots, uint8_t* pool, ts_device device) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (ts_status s = check_call(layout, slots, n, device, rows, pool); s.code != TS_OK) {
      return s;
    }
    if (device.type == TS_DEVICE_CUDA) {
      return cache(self).cuda->store(
          records_of(cache(self), *layout), rows, n, layout->dim, slots, pool, device,
          [&](const float* host_rows) { return refuse_non_finite(host_rows, n, layout->dim); });
    }
    const int64_t dim = layout->dim;
    // Validate everything before writing anything; the first bad value named.
    if (!rows_finite(rows, n * dim)) {
      return refuse_non_finite(rows, n, dim);
    }
    for (int64_t i = 0; i < n; ++i) {
      uint8_t* dst = record(pool, *layout, slots[i]);
      if (cache(self).fp32) {
        std::memcpy(dst, rows + i * dim, static_cast<size_t>(dim) * sizeof(float));
        continue;
      }
      narrow_bf16(rows + i * dim, dst, dim);
    }
    return ok();
  });
}

// One entry's bf16 values widened to fp32 (a decode step loads every key it attends).
TS_SIMD_CLONES void widen_bf16(const uint8_t* src, float* dst, int64_t dim) {
  for (int64_t c = 0; c < dim; ++c) {
    uint16_t h;
    std::memcpy(&h, src + 2 * c, 2);
    dst[c] = from_bf16(h);
  }
}

ts_status load(ts_instance* self, const ts_kv_layout* layout, const uint8_t* pool,
               const int64_t* slots, int64_t n, float* rows, ts_device device) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (ts_status s = check_call(layout, slots, n, device, rows, pool); s.code != TS_OK) {
      return s;
    }
    if (device.type == TS_DEVICE_CUDA) {
      return cache(self).cuda->load(records_of(cache(self), *layout), pool, slots, n, rows, device);
    }
    const int64_t dim = layout->dim;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* src = record(const_cast<uint8_t*>(pool), *layout, slots[i]);
      if (cache(self).fp32) {
        std::memcpy(rows + i * dim, src, static_cast<size_t>(dim) * sizeof(float));
        continue;
      }
      widen_bf16(src, rows + i * dim, dim);
    }
    return ok();
  });
}

// A CUDA device needs the plugin's CUDA module; which build (native or emulated) is known only
// at create(), from the host, so either will do here.
ts_status check_support(const char*, ts_device device) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (device.type == TS_DEVICE_CPU) {
      return ok();
    }
    if (device.type != TS_DEVICE_CUDA) {
      return fail(TS_ERR_UNSUPPORTED, "bf16 cache: CPU and CUDA devices only");
    }
    const std::string looked = tessera::sdk::find_cuda_sibling(
        reinterpret_cast<const void*>(&refuse_non_finite), "tessera_kvcache_bf16");
    if (looked.empty()) {
      return ok();
    }
    return fail(TS_ERR_UNSUPPORTED,
                "bf16 cache: its CUDA module is not installed: looked for " + looked);
  });
}

ts_status create(const ts_host_api* host, const char* options_json, ts_device device,
                 ts_instance** out) {
  return tessera::sdk::guarded([&]() -> ts_status {
    Bf16Cache impl{
        tessera::sdk::Logger(host, "bf16"), false,
        std::make_unique<CudaPath>("bf16", "tessera_kvcache_bf16", TS_BF16_CUDA_ENTRY_SYMBOL, host,
                                   reinterpret_cast<const void*>(&refuse_non_finite))};
    if (options_json != nullptr && *options_json != 0) {
      const auto options = nlohmann::json::parse(options_json);
      impl.fp32 = options.value("storage", std::string("bf16")) == "fp32";
    }
    if (device.type == TS_DEVICE_CUDA) {
      const ts_bf16_cuda_api* api = nullptr;
      if (ts_status s = impl.cuda->open(device.ordinal, &api); s.code != TS_OK) {
        return s;
      }
    }
    return tessera::sdk::create_instance<Bf16Cache>(out, std::move(impl));
  });
}

void destroy(ts_instance* instance) { tessera::sdk::destroy_instance<Bf16Cache>(instance); }

// ABI 1.4: on a CUDA device, the store without a wait (the kernels check the rows).
ts_status store_async(ts_instance* self, const ts_kv_layout* layout, const float* rows, int64_t n,
                      const int64_t* slots, uint8_t* pool, ts_device device,
                      int64_t* first_bad_row) {
  if (device.type != TS_DEVICE_CUDA || first_bad_row == nullptr) {
    return store(self, layout, rows, n, slots, pool, device);
  }
  return tessera::sdk::guarded([&]() -> ts_status {
    if (ts_status s = check_call(layout, slots, n, device, rows, pool); s.code != TS_OK) {
      return s;
    }
    return cache(self).cuda->store_async(records_of(cache(self), *layout), rows, n, slots, pool,
                                         device, first_bad_row);
  });
}

// ABI 1.6: slots in the device's memory, a negative slot a padding row. On a CUDA device one
// launch that reads nothing on the host (capturable in a CUDA graph); on a CPU device store().
ts_status store_device_slots(ts_instance* self, const ts_kv_layout* layout, const float* rows,
                             int64_t n, const int64_t* slots, uint8_t* pool, ts_device device,
                             int64_t* first_bad_row) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (layout == nullptr || n < 0 ||
        (n > 0 && (slots == nullptr || rows == nullptr || pool == nullptr))) {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "store_device_slots: layout, slots, rows or pool is "
                  "null, or a negative row count");
    }
    if (device.type == TS_DEVICE_CUDA) {
      return cache(self).cuda->store_device_slots(records_of(cache(self), *layout), rows, n, slots,
                                                  pool, device, first_bad_row);
    }
    return tessera::sdk::store_rows_with_slots(
        rows, n, layout->dim, slots, [&](const float* r, int64_t count, const int64_t* s) {
          return store(self, layout, r, count, s, pool, device);
        });
  });
}

const ts_kv_cache_table kTable = {sizeof(ts_kv_cache_table), describe, store, load, store_async,
                                  store_device_slots};

const ts_plugin_descriptor kDescriptor = {
    sizeof(ts_plugin_descriptor),
    TS_ABI_MAJOR,
    TS_ABI_MINOR,
    TS_KIND_KV_CACHE,
    "bf16",
    "1.0.0",
    "{\"compiler\":\"" __VERSION__ "\",\"cuda\":null,\"sm\":[]}",
    R"json({"type":"object","properties":{"storage":{"type":"string","enum":["bf16","fp32"],"default":"bf16","description":"fp32 keeps values unrounded, for parity tests only"}},"additionalProperties":false})json",
    R"({"devices":["cpu","cuda"],"bytes_per_entry":{"main_512":1024,"indexer_128":256},"fp32_storage_bytes_per_entry":{"main_512":2048,"indexer_128":512}})",
    check_support,
    create,
    destroy,
    &kTable,
};

}  // namespace

TESSERA_DEFINE_PLUGIN(kDescriptor)
