// The C entry points every frontend plugin needs, written once: check_support and create parse the
// options with the plugin's own parser, start/stop forward to its server object. A frontend then
// only declares its descriptor (name, version, build info, schema, capabilities):
//
//   using Entry = tessera::sdk::FrontendEntry<MyServer, MyOptions, &parse_my_options>;
//   const ts_plugin_descriptor kDescriptor = Entry::descriptor("my", "0.1.0", kBuildInfo,
//                                                               kSchema, kCapabilities);
//   TESSERA_DEFINE_PLUGIN(kDescriptor)
//
// Server must be constructible as Server(Options&&, const ts_host_api*) and have
// ts_status start(const ts_engine_api*) and ts_status stop(int64_t deadline_ms) (noexcept, or
// guarded inside). Header-only, C++20; part of the plugin SDK (docs/plugins.md).
#pragma once

#include <utility>

#include "tessera/plugin_abi.h"
#include "tessera/plugin_sdk.hpp"

// "gcc 12.2.0", "clang 14.0.6": for a plugin's build_info_json.
#if defined(__clang__)
#define TESSERA_SDK_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define TESSERA_SDK_COMPILER "gcc " __VERSION__
#else
#define TESSERA_SDK_COMPILER "unknown"
#endif

namespace tessera::sdk {

template <class Server, class Options, ts_status (*Parse)(const char*, Options&)>
struct FrontendEntry {
  static ts_status check_support(const char* options_json, ts_device /*device*/) {
    return guarded([&]() -> ts_status {
      Options options;
      return Parse(options_json, options);
    });
  }

  static ts_status create(const ts_host_api* host, const char* options_json, ts_device /*device*/,
                          ts_instance** out) {
    return guarded([&]() -> ts_status {
      Options options;
      if (ts_status s = Parse(options_json, options); s.code != TS_OK) {
        return s;
      }
      return create_instance<Server>(out, std::move(options), host);
    });
  }

  static void destroy(ts_instance* instance) { destroy_instance<Server>(instance); }

  static ts_status start(ts_instance* instance, const ts_engine_api* engine) {
    if (instance == nullptr) {
      return fail(TS_ERR_INVALID_ARGUMENT, "start: instance is NULL");
    }
    return self<Server>(instance).start(engine);
  }

  static ts_status stop(ts_instance* instance, int64_t deadline_ms) {
    if (instance == nullptr) {
      return fail(TS_ERR_INVALID_ARGUMENT, "stop: instance is NULL");
    }
    return self<Server>(instance).stop(deadline_ms);
  }

  static constexpr ts_frontend_table kTable{
      .struct_size = sizeof(ts_frontend_table),
      .start = &start,
      .stop = &stop,
  };

  // The strings must outlive the plugin (literals, or constants of the plugin).
  static ts_plugin_descriptor descriptor(const char* name, const char* version,
                                         const char* build_info_json,
                                         const char* options_schema_json,
                                         const char* capabilities_json) {
    return ts_plugin_descriptor{
        .struct_size = sizeof(ts_plugin_descriptor),
        .abi_major = TS_ABI_MAJOR,
        .abi_minor = TS_ABI_MINOR,
        .kind = TS_KIND_FRONTEND,
        .name = name,
        .version = version,
        .build_info_json = build_info_json,
        .options_schema_json = options_schema_json,
        .capabilities_json = capabilities_json,
        .check_support = &check_support,
        .create = &create,
        .destroy = &destroy,
        .functions = &kTable,
    };
  }
};

}  // namespace tessera::sdk
