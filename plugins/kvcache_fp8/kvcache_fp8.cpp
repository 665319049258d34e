// kv-cache format "fp8": DeepSeek-V4's FP8 latent cache (DSV4.md §4; README.md in this folder).
// Main entries: 448 fp8 e4m3 nope values with one UE8M0 scale per 64 channels, 64 bf16 rope
// values, 1 pad byte = 584 B, laid out page by page as FlashMLA "MODEL1" / sglang store them.
// Indexer keys: 128 fp8 values + one fp32 scale = 132 B. Stateless and reentrant (concurrent
// calls on different slots are safe; the same slot from two threads at once is a race, as for
// any memory).
//
// CUDA devices: rows and pool in device memory, slots in host memory (plugin_abi.h, ts_device).
// The kernels live in the plugin's CUDA module (cuda/, opened on the first CUDA call) and write
// the same bytes as the CPU path; plugins/common/kv_cuda_path.hpp does the rest (the refusal of
// non-finite input, with the same message, before anything is written).
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "fp8_cuda_api.h"
#include "fp8_layout.hpp"
#include "indexer_codec.hpp"
#include "kv_cuda_path.hpp"
#include "kv_padding_rows.hpp"
#include "latent_codec.hpp"
#include "tessera/finite_values.hpp"
#include "tessera/plugin_sdk.hpp"
#include "tessera/simd_clones.hpp"

namespace {

using tessera::sdk::fail;
using tessera::sdk::ok;
namespace fp8 = tessera::kvfp8;

using CudaPath = tessera::sdk::KvCudaPath<ts_fp8_cuda_api, ts_fp8_records>;

struct Fp8Cache {
  tessera::sdk::Logger log;
  std::unique_ptr<CudaPath> cuda;  // its module is opened on the first call with a CUDA device
};

Fp8Cache& cache(ts_instance* self) { return tessera::sdk::self<Fp8Cache>(self); }

ts_status describe(ts_instance*, int32_t stream, int32_t dim, int32_t rope_dim,
                   int32_t entries_per_page, ts_kv_layout* out) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (out == nullptr) {
      return fail(TS_ERR_INVALID_ARGUMENT, "describe: out is null");
    }
    ts_kv_layout layout{};
    const std::string why = fp8::describe_layout(stream, dim, rope_dim, entries_per_page, layout);
    if (!why.empty()) {
      return fail(TS_ERR_INVALID_ARGUMENT, "describe: " + why);
    }
    *out = layout;
    return ok();
  });
}

// Everything store and load refuse before touching memory.
ts_status check_call(const char* what, const ts_kv_layout* layout, const void* rows, int64_t n,
                     const int64_t* slots, const void* pool, ts_device device) {
  const std::string w(what);
  if (device.type != TS_DEVICE_CPU && device.type != TS_DEVICE_CUDA) {
    return fail(TS_ERR_UNSUPPORTED, w + ": the fp8 cache plugin runs on CPU and CUDA devices only");
  }
  if (layout == nullptr) {
    return fail(TS_ERR_INVALID_ARGUMENT, w + ": layout is null");
  }
  if (const std::string why = fp8::check_layout(*layout); !why.empty()) {
    return fail(TS_ERR_INVALID_ARGUMENT, w + ": " + why);
  }
  if (n < 0) {
    return fail(TS_ERR_INVALID_ARGUMENT, w + ": negative row count " + std::to_string(n));
  }
  if (n == 0) {
    return ok();
  }
  if (rows == nullptr || slots == nullptr || pool == nullptr) {
    return fail(TS_ERR_INVALID_ARGUMENT, w + ": rows, slots or pool is null");
  }
  const auto max_page = static_cast<int64_t>(std::numeric_limits<int64_t>::max() /
                                             static_cast<int64_t>(layout->page_bytes));
  for (int64_t i = 0; i < n; ++i) {
    if (slots[i] < 0 || slots[i] / layout->entries_per_page >= max_page) {
      return fail(TS_ERR_INVALID_ARGUMENT, w + ": slot " + std::to_string(slots[i]) + " at index " +
                                               std::to_string(i) + " is out of range");
    }
  }
  return ok();
}

// sdk::all_finite compiled for the widest vectors (a step stores 64 rows per layer).
TS_SIMD_CLONES bool rows_finite(const float* values, int64_t n) {
  return tessera::sdk::all_finite(values, n);
}

// Refuses rows [n, dim] (host memory) with a non-finite value: the first one, its row, slot
// and channel named.
ts_status refuse_non_finite(const float* rows, int64_t n, int64_t dim, const int64_t* slots) {
  const int64_t i = tessera::sdk::first_non_finite(rows, n * dim);
  return fail(TS_ERR_NUMERIC, "store: non-finite value " + std::to_string(rows[i]) + " in row " +
                                  std::to_string(i / dim) + " (slot " +
                                  std::to_string(slots[i / dim]) + "), channel " +
                                  std::to_string(i % dim) + "; nothing was written");
}

ts_fp8_records records_of(const ts_kv_layout& l) {
  return ts_fp8_records{l.stream == TS_KV_INDEXER ? 1 : 0, l.dim, l.rope_dim, l.entries_per_page,
                        l.page_bytes};
}

ts_status store(ts_instance* self, const ts_kv_layout* layout, const float* rows, int64_t n,
                const int64_t* slots, uint8_t* pool, ts_device device) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (ts_status s = check_call("store", layout, rows, n, slots, pool, device); s.code != TS_OK) {
      return s;
    }
    if (n == 0) {
      return ok();
    }
    if (device.type == TS_DEVICE_CUDA) {
      return cache(self).cuda->store(records_of(*layout), rows, n, layout->dim, slots, pool, device,
                                     [&](const float* host_rows) {
                                       return refuse_non_finite(host_rows, n, layout->dim, slots);
                                     });
    }
    const int64_t dim = layout->dim;
    // Validate everything before writing anything.
    if (!rows_finite(rows, n * dim)) {
      return refuse_non_finite(rows, n, dim, slots);
    }
    const int64_t per_page = layout->entries_per_page;
    const auto geometry = fp8::latent_geometry(dim, layout->rope_dim);
    for (int64_t i = 0; i < n; ++i) {
      uint8_t* page = pool + (slots[i] / per_page) * static_cast<int64_t>(layout->page_bytes);
      const int64_t entry = slots[i] % per_page;
      if (layout->stream == TS_KV_MAIN) {
        fp8::encode_latent(geometry, per_page, rows + i * dim, entry, page);
      } else {
        fp8::encode_indexer_key(dim, per_page, rows + i * dim, entry, page);
      }
    }
    return ok();
  });
}

ts_status load(ts_instance* self, const ts_kv_layout* layout, const uint8_t* pool,
               const int64_t* slots, int64_t n, float* rows, ts_device device) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (ts_status s = check_call("load", layout, rows, n, slots, pool, device); s.code != TS_OK) {
      return s;
    }
    if (n == 0) {
      return ok();
    }
    if (device.type == TS_DEVICE_CUDA) {
      return cache(self).cuda->load(records_of(*layout), pool, slots, n, rows, device);
    }
    const int64_t dim = layout->dim;
    const int64_t per_page = layout->entries_per_page;
    const auto geometry = fp8::latent_geometry(dim, layout->rope_dim);
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* page = pool + (slots[i] / per_page) * static_cast<int64_t>(layout->page_bytes);
      const int64_t entry = slots[i] % per_page;
      if (layout->stream == TS_KV_MAIN) {
        fp8::decode_latent(geometry, per_page, page, entry, rows + i * dim);
      } else {
        fp8::decode_indexer_key(dim, per_page, page, entry, rows + i * dim);
      }
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
      return fail(TS_ERR_UNSUPPORTED, "fp8 cache: CPU and CUDA devices only");
    }
    const std::string looked = tessera::sdk::find_cuda_sibling(
        reinterpret_cast<const void*>(&refuse_non_finite), "tessera_kvcache_fp8");
    if (looked.empty()) {
      return ok();
    }
    return fail(TS_ERR_UNSUPPORTED,
                "fp8 cache: its CUDA module is not installed: looked for " + looked);
  });
}

ts_status create(const ts_host_api* host, const char*, ts_device device, ts_instance** out) {
  return tessera::sdk::guarded([&]() -> ts_status {
    Fp8Cache impl{
        tessera::sdk::Logger(host, "fp8"),
        std::make_unique<CudaPath>("fp8", "tessera_kvcache_fp8", TS_FP8_CUDA_ENTRY_SYMBOL, host,
                                   reinterpret_cast<const void*>(&refuse_non_finite))};
    if (device.type == TS_DEVICE_CUDA) {
      const ts_fp8_cuda_api* api = nullptr;
      if (ts_status s = impl.cuda->open(device.ordinal, &api); s.code != TS_OK) {
        return s;
      }
    }
    return tessera::sdk::create_instance<Fp8Cache>(out, std::move(impl));
  });
}

void destroy(ts_instance* instance) { tessera::sdk::destroy_instance<Fp8Cache>(instance); }

// ABI 1.4: on a CUDA device, the store without a wait (the kernels check the rows).
ts_status store_async(ts_instance* self, const ts_kv_layout* layout, const float* rows, int64_t n,
                      const int64_t* slots, uint8_t* pool, ts_device device,
                      int64_t* first_bad_row) {
  if (device.type != TS_DEVICE_CUDA || first_bad_row == nullptr) {
    return store(self, layout, rows, n, slots, pool, device);
  }
  return tessera::sdk::guarded([&]() -> ts_status {
    if (ts_status s = check_call("store", layout, rows, n, slots, pool, device); s.code != TS_OK) {
      return s;
    }
    return cache(self).cuda->store_async(records_of(*layout), rows, n, slots, pool, device,
                                         first_bad_row);
  });
}

// ABI 1.6: slots in the device's memory, a negative slot a padding row. On a CUDA device one
// launch that reads nothing on the host (capturable in a CUDA graph); on a CPU device store().
ts_status store_device_slots(ts_instance* self, const ts_kv_layout* layout, const float* rows,
                             int64_t n, const int64_t* slots, uint8_t* pool, ts_device device,
                             int64_t* first_bad_row) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (layout == nullptr) {
      return fail(TS_ERR_INVALID_ARGUMENT, "store_device_slots: layout is null");
    }
    if (const std::string why = fp8::check_layout(*layout); !why.empty()) {
      return fail(TS_ERR_INVALID_ARGUMENT, "store_device_slots: " + why);
    }
    if (n < 0 || (n > 0 && (slots == nullptr || rows == nullptr || pool == nullptr))) {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "store_device_slots: rows, slots or pool is null, or "
                  "a negative row count");
    }
    if (device.type == TS_DEVICE_CUDA) {
      return cache(self).cuda->store_device_slots(records_of(*layout), rows, n, slots, pool, device,
                                                  first_bad_row);
    }
    return tessera::sdk::store_rows_with_slots(
        rows, n, layout->dim, slots, [&](const float* r, int64_t count, const int64_t* s) {
          return store(self, layout, r, count, s, pool, device);
        });
  });
}

const ts_kv_cache_table kTable = {sizeof(ts_kv_cache_table), describe, store, load, store_async,
                                  store_device_slots};

// round_trip_error: |x - load(store(x))| <= relative*|x| + of_row_amax*max|row| + absolute per
// value (docs/kvcache.md). Main: e4m3 rounding is <= 2^-4 |v| for normals and <= 2^-10 in scaled
// units for denormals, scale <= max(2 amax / 448, 2^-13), so 2^-10 * 2/448 = 4.36e-6 of the amax
// and 2^-23 = 1.19e-7 absolute; bf16 rope is within 2^-8 relative. Indexer: the same e4m3 terms
// with scale = max(amax, 1e-4) / 448 (2.18e-6 of the amax, 2.18e-10 absolute) plus fp32 rounding
// of the scale arithmetic (< 4e-7 relative).
const ts_plugin_descriptor kDescriptor = {
    sizeof(ts_plugin_descriptor),
    TS_ABI_MAJOR,
    TS_ABI_MINOR,
    TS_KIND_KV_CACHE,
    "fp8",
    "1.0.0",
    "{\"compiler\":\"" __VERSION__ "\",\"cuda\":null,\"sm\":[]}",
    R"({"type":"object","properties":{},"additionalProperties":false})",
    R"({"devices":["cpu","cuda"],"bytes_per_entry":{"main_512":584,"indexer_128":132},)"
    R"("layout":"FlashMLA MODEL1 / sglang DeepSeekV4SingleKVPool; indexer fp8 + fp32 scale",)"
    R"("round_trip_error":{"main":{"relative":0.0625,"of_row_amax":4.4e-6,"absolute":1.2e-7},)"
    R"("indexer":{"relative":0.06251,"of_row_amax":2.2e-6,"absolute":2.2e-10}}})",
    check_support,
    create,
    destroy,
    &kTable,
};

}  // namespace

TESSERA_DEFINE_PLUGIN(kDescriptor)
