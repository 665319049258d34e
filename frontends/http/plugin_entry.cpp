// The http frontend plugin's single exported entry: descriptor, options, create/destroy and the
// frontend table (start with the engine, stop with a drain deadline).
#include <boost/version.hpp>

#include "http_options.hpp"
#include "http_server.hpp"
#include "tessera/plugin_abi.h"
#include "tessera/plugin_sdk.hpp"

namespace tessera::http {
namespace {

#if defined(__clang__)
#define TS_HTTP_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define TS_HTTP_COMPILER "gcc " __VERSION__
#else
#define TS_HTTP_COMPILER "unknown"
#endif

constexpr const char* kBuildInfoJson =
    R"({"compiler":")" TS_HTTP_COMPILER R"(","cuda":"none","sm":[],"boost":")" BOOST_LIB_VERSION
    R"("})";

constexpr const char* kCapabilitiesJson =
    R"json({"devices":["cpu"],"protocol":"http/1.1","api":"openai",)json"
    R"json("routes":["/v1/chat/completions","/v1/completions","/v1/models","/tokenize",)json"
    R"json("/detokenize","/health","/ready","/metrics"]})json";

ts_status check_support(const char* options_json, ts_device /*device*/) {
  HttpOptions options;
  return parse_http_options(options_json, options);
}

ts_status create(const ts_host_api* host, const char* options_json, ts_device /*device*/,
                 ts_instance** out) {
  return sdk::guarded([&]() -> ts_status {
    HttpOptions options;
    if (ts_status s = parse_http_options(options_json, options); s.code != TS_OK) return s;
    return sdk::create_instance<HttpServer>(out, std::move(options), host);
  });
}

void destroy(ts_instance* instance) { sdk::destroy_instance<HttpServer>(instance); }

ts_status start(ts_instance* self, const ts_engine_api* engine) {
  if (self == nullptr) return sdk::fail(TS_ERR_INVALID_ARGUMENT, "start: instance is NULL");
  return sdk::self<HttpServer>(self).start(engine);
}

ts_status stop(ts_instance* self, int64_t deadline_ms) {
  if (self == nullptr) return sdk::fail(TS_ERR_INVALID_ARGUMENT, "stop: instance is NULL");
  return sdk::self<HttpServer>(self).stop(deadline_ms);
}

constexpr ts_frontend_table kFrontendTable{
    .struct_size = sizeof(ts_frontend_table),
    .start = &start,
    .stop = &stop,
};

// Not constexpr: the schema text is defined in http_options.cpp (constant-initialised there).
const ts_plugin_descriptor kDescriptor{
    .struct_size = sizeof(ts_plugin_descriptor),
    .abi_major = TS_ABI_MAJOR,
    .abi_minor = TS_ABI_MINOR,
    .kind = TS_KIND_FRONTEND,
    .name = "http",
    .version = "0.1.0",
    .build_info_json = kBuildInfoJson,
    .options_schema_json = kHttpOptionsSchemaJson,
    .capabilities_json = kCapabilitiesJson,
    .check_support = &check_support,
    .create = &create,
    .destroy = &destroy,
    .functions = &kFrontendTable,
};

}  // namespace
}  // namespace tessera::http

TESSERA_DEFINE_PLUGIN(tessera::http::kDescriptor)
