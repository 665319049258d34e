// kv-cache format "fp8": DeepSeek-V4's FP8 latent cache (DSV4.md §4; README.md in this folder).
// Main entries: 448 fp8 e4m3 nope values with one UE8M0 scale per 64 channels, 64 bf16 rope
// values, 1 pad byte = 584 B, laid out page by page as FlashMLA "MODEL1" / sglang store them.
// Indexer keys: 128 fp8 values + one fp32 scale = 132 B. Stateless and reentrant (concurrent
// calls on different slots are safe; the same slot from two threads at once is a race, as for
// any memory).
//
// CUDA devices: rows and pool in device memory, slots in host memory (plugin_abi.h, ts_device).
// The kernels live in the plugin's CUDA module (cuda/, loaded on the first CUDA call:
// plugins/common/cuda_sibling.hpp) and write the same bytes as the CPU path. store() first copies
// the rows to the host and waits for the stream, so that non-finite input is refused, with the
// same message, before anything is written; then it enqueues the writes on device.stream and
// returns. load() only enqueues.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cuda_sibling.hpp"
#include "fp8_cuda_api.h"
#include "fp8_layout.hpp"
#include "indexer_codec.hpp"
#include "latent_codec.hpp"
#include "tessera/finite_values.hpp"
#include "tessera/plugin_sdk.hpp"
#include "tessera/simd_clones.hpp"

namespace {

using tessera::sdk::fail;
using tessera::sdk::ok;
namespace fp8 = tessera::kvfp8;

using CudaModule = tessera::sdk::CudaSibling<ts_fp8_cuda_api>;

struct Fp8Cache {
  tessera::sdk::Logger log;
  int32_t cuda_build = TS_CUDA_BUILD_NATIVE;
  std::unique_ptr<CudaModule> cuda;  // loaded on the first call with a CUDA device
};

Fp8Cache& cache(ts_instance* self) { return tessera::sdk::self<Fp8Cache>(self); }

ts_status describe(ts_instance*, int32_t stream, int32_t dim, int32_t rope_dim,
                   int32_t entries_per_page, ts_kv_layout* out) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (out == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, "describe: out is null");
    ts_kv_layout layout{};
    const std::string why = fp8::describe_layout(stream, dim, rope_dim, entries_per_page, layout);
    if (!why.empty()) return fail(TS_ERR_INVALID_ARGUMENT, "describe: " + why);
    *out = layout;
    return ok();
  });
}

// Everything store and load refuse before touching memory.
ts_status check_call(const char* what, const ts_kv_layout* layout, const void* rows, int64_t n,
                     const int64_t* slots, const void* pool, ts_device device) {
  const std::string w(what);
  if (device.type != TS_DEVICE_CPU && device.type != TS_DEVICE_CUDA)
    return fail(TS_ERR_UNSUPPORTED, w + ": the fp8 cache plugin runs on CPU and CUDA devices only");
  if (layout == nullptr) return fail(TS_ERR_INVALID_ARGUMENT, w + ": layout is null");
  if (const std::string why = fp8::check_layout(*layout); !why.empty())
    return fail(TS_ERR_INVALID_ARGUMENT, w + ": " + why);
  if (n < 0) return fail(TS_ERR_INVALID_ARGUMENT, w + ": negative row count " + std::to_string(n));
  if (n == 0) return ok();
  if (rows == nullptr || slots == nullptr || pool == nullptr)
    return fail(TS_ERR_INVALID_ARGUMENT, w + ": rows, slots or pool is null");
  const auto max_page = static_cast<int64_t>(std::numeric_limits<int64_t>::max() /
                                             static_cast<int64_t>(layout->page_bytes));
  for (int64_t i = 0; i < n; ++i)
    if (slots[i] < 0 || slots[i] / layout->entries_per_page >= max_page)
      return fail(TS_ERR_INVALID_ARGUMENT, w + ": slot " + std::to_string(slots[i]) + " at index " +
                                               std::to_string(i) + " is out of range");
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

// The plugin's CUDA module and a check of device `ordinal`, or a refusal naming what is missing.
ts_status cuda_module(Fp8Cache& impl, int32_t ordinal, const ts_fp8_cuda_api** api) {
  std::string why;
  *api = impl.cuda->get(reinterpret_cast<const void*>(&refuse_non_finite), impl.cuda_build, why);
  if (*api == nullptr) return fail(TS_ERR_UNSUPPORTED, "fp8 cache on CUDA: " + why);
  if (const char* e = (*api)->check_device(ordinal); e != nullptr)
    return fail(TS_ERR_UNSUPPORTED, std::string("fp8 cache: ") + e);
  return ok();
}

ts_status check_device_memory(const ts_fp8_cuda_api& api, const void* rows, const void* pool) {
  if (!api.is_device_memory(rows))
    return fail(TS_ERR_INVALID_ARGUMENT, "rows is host memory; a CUDA device needs device memory");
  if (!api.is_device_memory(pool))
    return fail(TS_ERR_INVALID_ARGUMENT, "pool is host memory; a CUDA device needs device memory");
  return ok();
}

ts_fp8_records records_of(const ts_kv_layout& l) {
  return ts_fp8_records{l.stream == TS_KV_INDEXER ? 1 : 0, l.dim, l.rope_dim, l.entries_per_page,
                        l.page_bytes};
}

ts_status store_on_device(Fp8Cache& impl, const ts_kv_layout& layout, const float* rows, int64_t n,
                          const int64_t* slots, uint8_t* pool, ts_device device) {
  const ts_fp8_cuda_api* api = nullptr;
  if (ts_status s = cuda_module(impl, device.ordinal, &api); s.code != TS_OK) return s;
  if (ts_status s = check_device_memory(*api, rows, pool); s.code != TS_OK) return s;
  const int64_t dim = layout.dim;
  std::vector<float> host(static_cast<size_t>(n * dim));
  if (const char* e = api->copy_to_host(device.ordinal, device.stream, host.data(), rows,
                                        host.size() * sizeof(float));
      e != nullptr)
    return fail(TS_ERR_INTERNAL, std::string("fp8 store: ") + e);
  if (!rows_finite(host.data(), n * dim)) return refuse_non_finite(host.data(), n, dim, slots);
  const ts_fp8_records records = records_of(layout);
  if (const char* e = api->store(device.ordinal, device.stream, &records, rows, n, slots, pool);
      e != nullptr)
    return fail(TS_ERR_INTERNAL, std::string("fp8 store: ") + e);
  return ok();
}

ts_status load_on_device(Fp8Cache& impl, const ts_kv_layout& layout, const uint8_t* pool,
                         const int64_t* slots, int64_t n, float* rows, ts_device device) {
  const ts_fp8_cuda_api* api = nullptr;
  if (ts_status s = cuda_module(impl, device.ordinal, &api); s.code != TS_OK) return s;
  if (ts_status s = check_device_memory(*api, rows, pool); s.code != TS_OK) return s;
  const ts_fp8_records records = records_of(layout);
  if (const char* e = api->load(device.ordinal, device.stream, &records, pool, slots, n, rows);
      e != nullptr)
    return fail(TS_ERR_INTERNAL, std::string("fp8 load: ") + e);
  return ok();
}

ts_status store(ts_instance* self, const ts_kv_layout* layout, const float* rows, int64_t n,
                const int64_t* slots, uint8_t* pool, ts_device device) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (ts_status s = check_call("store", layout, rows, n, slots, pool, device); s.code != TS_OK)
      return s;
    if (n == 0) return ok();
    if (device.type == TS_DEVICE_CUDA)
      return store_on_device(cache(self), *layout, rows, n, slots, pool, device);
    const int64_t dim = layout->dim;
    // Validate everything before writing anything.
    if (!rows_finite(rows, n * dim)) return refuse_non_finite(rows, n, dim, slots);
    const int64_t per_page = layout->entries_per_page;
    const auto geometry = fp8::latent_geometry(dim, layout->rope_dim);
    for (int64_t i = 0; i < n; ++i) {
      uint8_t* page = pool + (slots[i] / per_page) * static_cast<int64_t>(layout->page_bytes);
      const int64_t entry = slots[i] % per_page;
      if (layout->stream == TS_KV_MAIN)
        fp8::encode_latent(geometry, per_page, rows + i * dim, entry, page);
      else
        fp8::encode_indexer_key(dim, per_page, rows + i * dim, entry, page);
    }
    return ok();
  });
}

ts_status load(ts_instance* self, const ts_kv_layout* layout, const uint8_t* pool,
               const int64_t* slots, int64_t n, float* rows, ts_device device) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (ts_status s = check_call("load", layout, rows, n, slots, pool, device); s.code != TS_OK)
      return s;
    if (n == 0) return ok();
    if (device.type == TS_DEVICE_CUDA)
      return load_on_device(cache(self), *layout, pool, slots, n, rows, device);
    const int64_t dim = layout->dim;
    const int64_t per_page = layout->entries_per_page;
    const auto geometry = fp8::latent_geometry(dim, layout->rope_dim);
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* page = pool + (slots[i] / per_page) * static_cast<int64_t>(layout->page_bytes);
      const int64_t entry = slots[i] % per_page;
      if (layout->stream == TS_KV_MAIN)
        fp8::decode_latent(geometry, per_page, page, entry, rows + i * dim);
      else
        fp8::decode_indexer_key(dim, per_page, page, entry, rows + i * dim);
    }
    return ok();
  });
}

// A CUDA device needs the plugin's CUDA module; which build (native or emulated) is known only
// at create(), from the host, so either will do here.
ts_status check_support(const char*, ts_device device) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (device.type == TS_DEVICE_CPU) return ok();
    if (device.type != TS_DEVICE_CUDA)
      return fail(TS_ERR_UNSUPPORTED, "fp8 cache: CPU and CUDA devices only");
    const std::string looked = tessera::sdk::find_cuda_sibling(
        reinterpret_cast<const void*>(&refuse_non_finite), "tessera_kvcache_fp8");
    if (looked.empty()) return ok();
    return fail(TS_ERR_UNSUPPORTED,
                "fp8 cache: its CUDA module is not installed: looked for " + looked);
  });
}

ts_status create(const ts_host_api* host, const char*, ts_device device, ts_instance** out) {
  return tessera::sdk::guarded([&]() -> ts_status {
    Fp8Cache impl{tessera::sdk::Logger(host, "fp8"), tessera::sdk::cuda_build_of(host),
                  std::make_unique<CudaModule>("tessera_kvcache_fp8", TS_FP8_CUDA_ENTRY_SYMBOL)};
    if (device.type == TS_DEVICE_CUDA) {
      const ts_fp8_cuda_api* api = nullptr;
      if (ts_status s = cuda_module(impl, device.ordinal, &api); s.code != TS_OK) return s;
    }
    return tessera::sdk::create_instance<Fp8Cache>(out, std::move(impl));
  });
}

void destroy(ts_instance* instance) { tessera::sdk::destroy_instance<Fp8Cache>(instance); }

const ts_kv_cache_table kTable = {sizeof(ts_kv_cache_table), describe, store, load};

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
