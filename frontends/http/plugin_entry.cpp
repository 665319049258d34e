// The http frontend plugin's single exported entry: its descriptor; the C entry points (options,
// create/destroy, start with the engine, stop with a drain deadline) come from the SDK's
// FrontendEntry.
#include <boost/version.hpp>

#include "http_options.hpp"
#include "http_server.hpp"
#include "tessera/frontend_sdk.hpp"

namespace tessera::http {
namespace {

constexpr const char* kBuildInfoJson =
    R"({"compiler":")" TESSERA_SDK_COMPILER R"(","cuda":"none","sm":[],"boost":")" BOOST_LIB_VERSION
    R"("})";

constexpr const char* kCapabilitiesJson =
    R"json({"devices":["cpu"],"protocol":"http/1.1","api":"openai",)json"
    R"json("routes":["/v1/chat/completions","/v1/completions","/v1/models","/tokenize",)json"
    R"json("/detokenize","/health","/ready","/metrics","/v1/ab/report"]})json";

using Entry = sdk::FrontendEntry<HttpServer, HttpOptions, &parse_http_options>;

// Not constexpr: the schema text is defined in http_options.cpp.
const ts_plugin_descriptor kDescriptor =
    Entry::descriptor("http", "0.1.0", kBuildInfoJson, kHttpOptionsSchemaJson, kCapabilitiesJson);

}  // namespace
}  // namespace tessera::http

TESSERA_DEFINE_PLUGIN(tessera::http::kDescriptor)
