// The grpc frontend plugin's single exported entry: descriptor, options, create/destroy and the
// frontend table (start with the engine, stop with a drain deadline).
#include <grpcpp/grpcpp.h>

#include "grpc_options.hpp"
#include "grpc_server.hpp"
#include "tessera/plugin_abi.h"
#include "tessera/plugin_sdk.hpp"

namespace tessera::grpcfe {
namespace {

#if defined(__clang__)
#define TS_GRPC_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define TS_GRPC_COMPILER "gcc " __VERSION__
#else
#define TS_GRPC_COMPILER "unknown"
#endif

constexpr const char* kBuildInfoJson =
    R"({"compiler":")" TS_GRPC_COMPILER
    R"(","cuda":"none","sm":[],"grpc":")" GRPC_CPP_VERSION_STRING R"("})";

constexpr const char* kCapabilitiesJson =
    R"json({"devices":["cpu"],"protocol":"grpc","api":"tessera.v1",)json"
    R"json("services":["tessera.v1.Generation","grpc.health.v1.Health",)json"
    R"json("grpc.reflection.v1alpha.ServerReflection (option)"]})json";

ts_status check_support(const char* options_json, ts_device /*device*/) {
  GrpcOptions options;
  return parse_grpc_options(options_json, options);
}

ts_status create(const ts_host_api* host, const char* options_json, ts_device /*device*/,
                 ts_instance** out) {
  return sdk::guarded([&]() -> ts_status {
    GrpcOptions options;
    if (ts_status s = parse_grpc_options(options_json, options); s.code != TS_OK) return s;
    return sdk::create_instance<GrpcServer>(out, std::move(options), host);
  });
}

void destroy(ts_instance* instance) { sdk::destroy_instance<GrpcServer>(instance); }

ts_status start(ts_instance* self, const ts_engine_api* engine) {
  if (self == nullptr) return sdk::fail(TS_ERR_INVALID_ARGUMENT, "start: instance is NULL");
  return sdk::self<GrpcServer>(self).start(engine);
}

ts_status stop(ts_instance* self, int64_t deadline_ms) {
  if (self == nullptr) return sdk::fail(TS_ERR_INVALID_ARGUMENT, "stop: instance is NULL");
  return sdk::self<GrpcServer>(self).stop(deadline_ms);
}

constexpr ts_frontend_table kFrontendTable{
    .struct_size = sizeof(ts_frontend_table),
    .start = &start,
    .stop = &stop,
};

// Not constexpr: the schema text is defined in grpc_options.cpp (constant-initialised there).
const ts_plugin_descriptor kDescriptor{
    .struct_size = sizeof(ts_plugin_descriptor),
    .abi_major = TS_ABI_MAJOR,
    .abi_minor = TS_ABI_MINOR,
    .kind = TS_KIND_FRONTEND,
    .name = "grpc",
    .version = "0.1.0",
    .build_info_json = kBuildInfoJson,
    .options_schema_json = kGrpcOptionsSchemaJson,
    .capabilities_json = kCapabilitiesJson,
    .check_support = &check_support,
    .create = &create,
    .destroy = &destroy,
    .functions = &kFrontendTable,
};

}  // namespace
}  // namespace tessera::grpcfe

TESSERA_DEFINE_PLUGIN(tessera::grpcfe::kDescriptor)
