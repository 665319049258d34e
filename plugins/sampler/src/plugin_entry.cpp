// The plugin's single exported entry: descriptor, options check, create/destroy and the sampler
// function table.
#include <string>

#include "sampler_options.hpp"
#include "standard_sampler.hpp"
#include "tessera/plugin_abi.h"
#include "tessera/plugin_sdk.hpp"

namespace tessera::sampler {
namespace {

#if defined(__clang__)
#define TS_SAMPLER_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define TS_SAMPLER_COMPILER "gcc " __VERSION__
#else
#define TS_SAMPLER_COMPILER "unknown"
#endif

constexpr const char* kBuildInfoJson =
    R"({"compiler":")" TS_SAMPLER_COMPILER R"(","cuda":"none","sm":[]})";

// Kind-specific facts the host may show: which logprobs are reported and how draws are keyed;
// greedy rows may come without their values (ABI 1.5: their scan answers them).
constexpr const char* kCapabilitiesJson =
    R"json({"devices":["cpu"],"logprobs_mode":"raw_logprobs","rng":"splitmix64(seed, rng_counter)",)json"
    R"("greedy_from_scan":true,)"
    R"("order":["repetition_penalty","frequency_penalty","presence_penalty","temperature",)"
    R"("top_k","top_p","min_p"]})";

ts_status check_device(ts_device device) {
  if (device.type != TS_DEVICE_CPU) {
    return sdk::fail(TS_ERR_UNSUPPORTED,
                     "the standard sampler runs on the CPU only (asked for device type " +
                         std::to_string(device.type) + ", ordinal " +
                         std::to_string(device.ordinal) + ")");
  }
  return sdk::ok();
}

ts_status check_support(const char* options_json, ts_device device) {
  return sdk::guarded([&]() -> ts_status {
    SamplerOptions options;
    if (ts_status s = parse_sampler_options(options_json, options); s.code != TS_OK) {
      return s;
    }
    return check_device(device);
  });
}

ts_status create(const ts_host_api* host, const char* options_json, ts_device device,
                 ts_instance** out) {
  return sdk::guarded([&]() -> ts_status {
    SamplerOptions options;
    if (ts_status s = parse_sampler_options(options_json, options); s.code != TS_OK) {
      return s;
    }
    if (ts_status s = check_device(device); s.code != TS_OK) {
      return s;
    }
    return sdk::create_instance<StandardSampler>(out, host, options);
  });
}

void destroy(ts_instance* instance) { sdk::destroy_instance<StandardSampler>(instance); }

// The three entry points differ only in the hints they pass: scans (ABI 1.1), groups (1.2) or none.
ts_status sample_with(const char* entry, ts_instance* self, const ts_sampler_row* rows,
                      int32_t n_rows, int32_t vocab, ts_sampler_result* results,
                      const ts_row_scan* scans, const ts_row_groups* groups,
                      const char* required_hints) {
  if (self == nullptr) {
    return sdk::fail(TS_ERR_INVALID_ARGUMENT, std::string(entry) + ": instance is NULL");
  }
  if (required_hints != nullptr && scans == nullptr && groups == nullptr && n_rows > 0) {
    return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                     std::string(entry) + ": " + required_hints + " is NULL");
  }
  return sdk::self<StandardSampler>(self).sample(rows, n_rows, vocab, results, scans, groups);
}

ts_status sample(ts_instance* self, const ts_sampler_row* rows, int32_t n_rows, int32_t vocab,
                 ts_sampler_result* results) {
  return sample_with("sample", self, rows, n_rows, vocab, results, nullptr, nullptr, nullptr);
}

ts_status sample_scanned(ts_instance* self, const ts_sampler_row* rows, const ts_row_scan* scans,
                         int32_t n_rows, int32_t vocab, ts_sampler_result* results) {
  return sample_with("sample_scanned", self, rows, n_rows, vocab, results, scans, nullptr, "scans");
}

ts_status sample_grouped(ts_instance* self, const ts_sampler_row* rows, const ts_row_groups* groups,
                         int32_t n_rows, int32_t vocab, ts_sampler_result* results) {
  return sample_with("sample_grouped", self, rows, n_rows, vocab, results, nullptr, groups,
                     "groups");
}

constexpr ts_sampler_table kSamplerTable{
    .struct_size = sizeof(ts_sampler_table),
    .sample = &sample,
    .sample_scanned = &sample_scanned,
    .sample_grouped = &sample_grouped,
};

constexpr ts_plugin_descriptor kDescriptor{
    .struct_size = sizeof(ts_plugin_descriptor),
    .abi_major = TS_ABI_MAJOR,
    .abi_minor = TS_ABI_MINOR,
    .kind = TS_KIND_SAMPLER,
    .name = kPluginName,
    .version = "0.1.0",
    .build_info_json = kBuildInfoJson,
    .options_schema_json = kOptionsSchemaJson,
    .capabilities_json = kCapabilitiesJson,
    .check_support = &check_support,
    .create = &create,
    .destroy = &destroy,
    .functions = &kSamplerTable,
};

}  // namespace
}  // namespace tessera::sampler

TESSERA_DEFINE_PLUGIN(tessera::sampler::kDescriptor)
