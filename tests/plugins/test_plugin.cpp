// One source, many deliberately good or broken plugins for the registry tests. CMake builds it
// several times with different TP_* definitions (see CMakeLists.txt); each variant breaks exactly
// one rule the host enforces, so each test proves one refusal.
//
//   TP_NAME        plugin name (string literal)
//   TP_KV_CACHE    build a kv_cache plugin (a real but refusing table) instead of a sampler
//   TP_ABI_MAJOR / TP_ABI_MINOR   advertised ABI (default: the SDK's)
//   TP_TABLE_SIZE  advertised function-table size (default: the real one)
//   TP_SCHEMA      options schema text (default: bias/token/label schema below)
//   TP_CREATE_FAILS, TP_THROWS_IN_SAMPLE, TP_THROWS_UNGUARDED, TP_NO_ENTRY   behaviours
#include <cmath>
#include <stdexcept>
#include <string>

#include "tessera/plugin_sdk.hpp"

#ifndef TP_NAME
#error "TP_NAME must be defined"
#endif
// The preprocessor cannot compare enum values, hence a flag rather than a kind macro.
#ifdef TP_KV_CACHE
#define TP_KIND TS_KIND_KV_CACHE
#else
#define TP_KIND TS_KIND_SAMPLER
#endif
#ifndef TP_ABI_MAJOR
#define TP_ABI_MAJOR TS_ABI_MAJOR
#endif
#ifndef TP_ABI_MINOR
#define TP_ABI_MINOR TS_ABI_MINOR
#endif
#ifndef TP_SCHEMA
// A raw string cannot sit in a multi-line macro (the continuations would land inside it).
constexpr const char kDefaultSchema[] = R"({"type": "object", "additionalProperties": false,
  "properties": {
    "bias": {"type": "number", "minimum": -100, "maximum": 100, "default": 0},
    "token": {"type": "integer", "minimum": 0, "default": 0},
    "label": {"type": "string", "enum": ["plain", "fancy"], "default": "plain"}}})";
#define TP_SCHEMA kDefaultSchema
#endif

namespace {

using tessera::sdk::fail;
using tessera::sdk::guarded;
using tessera::sdk::ok;

// Argmax over logits with `bias` added to logit `token`: small, but a real sampler, so the tests
// can check that options reach the instance.
struct TestSampler {
  TestSampler(const ts_host_api* host, const std::string& options)
      : logger(host, TP_NAME),
        bias(read_number(options, "bias")),
        token(static_cast<int>(read_number(options, "token"))) {
    logger.info("received options: " + options);
  }
  // The host hands normalized options (defaults filled); a crude scan keeps this file free of
  // JSON dependencies: find `"key":` and read the number after it.
  static double read_number(const std::string& json, const std::string& key) {
    const std::string needle = "\"" + key + "\":";
    const std::size_t at = json.find(needle);
    if (at == std::string::npos) throw std::runtime_error("option " + key + " missing");
    return std::stod(json.substr(at + needle.size()));
  }
  tessera::sdk::Logger logger;
  double bias;
  int token;
};

ts_status check_support(const char* /*options*/, ts_device device) {
  return guarded([&] {
    if (device.type != TS_DEVICE_CPU)
      return fail(TS_ERR_UNSUPPORTED, std::string(TP_NAME) + " runs on CPU only");
    return ok();
  });
}

ts_status create(const ts_host_api* host, const char* options, ts_device /*device*/,
                 ts_instance** out) {
#if defined(TP_CREATE_FAILS)
  (void)host, (void)options, (void)out;
  return fail(TS_ERR_OUT_OF_MEMORY, "needs 64 GiB of pinned host memory, only 2 GiB are free");
#elif defined(TP_THROWS_UNGUARDED)
  (void)host, (void)options, (void)out;
  throw std::runtime_error("thrown outside any guard");  // what a careless plugin would do
#else
  return tessera::sdk::create_instance<TestSampler>(out, host, std::string(options));
#endif
}

void destroy(ts_instance* instance) { tessera::sdk::destroy_instance<TestSampler>(instance); }

ts_status sample(ts_instance* self, const ts_sampler_row* rows, int32_t n_rows, int32_t vocab,
                 ts_sampler_result* results) {
  return guarded([&] {
    const TestSampler& s = tessera::sdk::self<TestSampler>(self);
#if defined(TP_THROWS_IN_SAMPLE)
    (void)s, (void)rows, (void)n_rows, (void)vocab, (void)results;
    throw std::out_of_range("simulated bug: index 7 past the end");
#endif
    for (int32_t r = 0; r < n_rows; ++r) {
      int32_t best = 0;
      double best_value = -INFINITY;
      for (int32_t v = 0; v < vocab; ++v) {
        const double value = rows[r].logits[v] + (v == s.token ? s.bias : 0.0);
        if (!std::isfinite(value))
          return fail(TS_ERR_NUMERIC, "row " + std::to_string(r) + " has a non-finite logit");
        if (value > best_value) best_value = value, best = v;
      }
      results[r].token = best;
      results[r].n_top = 0;
    }
    return ok();
  });
}

#ifdef TP_KV_CACHE
ts_status kv_describe(ts_instance*, int32_t, int32_t, int32_t, int32_t, ts_kv_layout*) {
  return fail(TS_ERR_UNSUPPORTED, "test plugin");
}
ts_status kv_store(ts_instance*, const ts_kv_layout*, const float*, int64_t, const int64_t*,
                   uint8_t*, ts_device) {
  return fail(TS_ERR_UNSUPPORTED, "test plugin");
}
ts_status kv_load(ts_instance*, const ts_kv_layout*, const uint8_t*, const int64_t*, int64_t,
                  float*, ts_device) {
  return fail(TS_ERR_UNSUPPORTED, "test plugin");
}
constexpr ts_kv_cache_table kTable = {sizeof(ts_kv_cache_table), kv_describe, kv_store, kv_load};
#else
#ifndef TP_TABLE_SIZE
#define TP_TABLE_SIZE sizeof(ts_sampler_table)
#endif
constexpr ts_sampler_table kTable = {TP_TABLE_SIZE, sample};
#endif

constexpr ts_plugin_descriptor kDescriptor = {
    sizeof(ts_plugin_descriptor),
    TP_ABI_MAJOR,
    TP_ABI_MINOR,
    TP_KIND,
    TP_NAME,
    "0.0.1-test",
    R"({"compiler": "test", "cuda": null, "sm": []})",
    TP_SCHEMA,
    R"({"devices": ["cpu"]})",
    check_support,
    create,
    destroy,
    &kTable,
};

}  // namespace

#ifndef TP_NO_ENTRY
TESSERA_DEFINE_PLUGIN(kDescriptor)
#else
// Exported under another name, so the file is a valid shared object without the entry symbol.
extern "C" __attribute__((visibility("default"))) const ts_plugin_descriptor* not_the_entry() {
  return &kDescriptor;
}
#endif
