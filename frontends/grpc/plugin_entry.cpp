// The grpc frontend plugin's single exported entry: its descriptor; the C entry points (options,
// create/destroy, start with the engine, stop with a drain deadline) come from the SDK's
// FrontendEntry.
#include <grpcpp/grpcpp.h>

#include "grpc_options.hpp"
#include "grpc_server.hpp"
#include "tessera/frontend_sdk.hpp"

namespace tessera::grpcfe {
namespace {

constexpr const char* kBuildInfoJson =
    R"({"compiler":")" TESSERA_SDK_COMPILER
    R"(","cuda":"none","sm":[],"grpc":")" GRPC_CPP_VERSION_STRING R"("})";

constexpr const char* kCapabilitiesJson =
    R"json({"devices":["cpu"],"protocol":"grpc","api":"tessera.v1",)json"
    R"json("services":["tessera.v1.Generation","grpc.health.v1.Health",)json"
    R"json("grpc.reflection.v1alpha.ServerReflection (option)"]})json";

using Entry = sdk::FrontendEntry<GrpcServer, GrpcOptions, &parse_grpc_options>;

// Not constexpr: the schema text is defined in grpc_options.cpp.
const ts_plugin_descriptor kDescriptor =
    Entry::descriptor("grpc", "0.1.0", kBuildInfoJson, kGrpcOptionsSchemaJson, kCapabilitiesJson);

}  // namespace
}  // namespace tessera::grpcfe

TESSERA_DEFINE_PLUGIN(tessera::grpcfe::kDescriptor)
