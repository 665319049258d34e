#include "grpc_options.hpp"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "tessera/plugin_sdk.hpp"

namespace tessera::grpcfe {

const char* const kGrpcOptionsSchemaJson = R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "listen": {"type": "string", "default": "127.0.0.1:50051",
      "description": "host:port to listen on (plaintext HTTP/2); port 0 picks a free one"},
    "port_file": {"type": "string", "default": "",
      "description": "file written with the bound port once listening (for port 0)"},
    "reflection": {"type": "boolean", "default": false,
      "description": "serve the gRPC server reflection service (grpcurl, grpc_cli)"},
    "max_stop": {"type": "integer", "minimum": 0, "maximum": 1024, "default": 16,
      "description": "stop strings plus stop token ids per request"},
    "api_key": {"type": "string", "default": "",
      "description": "required as 'authorization: Bearer <key>' metadata on tessera.v1.Generation (health and reflection stay open); empty: no key"},
    "api_key_env": {"type": "string", "default": "",
      "description": "name of an environment variable holding the key (wins over api_key when set and non-empty)"}
  }
})json";

ts_status parse_grpc_options(const char* options_json, GrpcOptions& out) noexcept {
  return sdk::guarded([&]() -> ts_status {
    const auto j = nlohmann::json::parse(options_json ? options_json : "{}", nullptr, false);
    if (!j.is_object()) return sdk::fail(TS_ERR_INVALID_ARGUMENT, "options must be a JSON object");
    GrpcOptions o;
    try {
      o.listen = j.value("listen", o.listen);
      o.port_file = j.value("port_file", o.port_file);
      o.reflection = j.value("reflection", o.reflection);
      o.max_stop = j.value("max_stop", o.max_stop);
      o.api_key = j.value("api_key", std::string());
      const std::string env = j.value("api_key_env", std::string());
      if (!env.empty()) {
        const char* value = std::getenv(env.c_str());
        if (value != nullptr && *value != '\0') o.api_key = value;
      }
    } catch (const nlohmann::json::exception& e) {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT, std::string("options: ") + e.what());
    }
    const auto colon = o.listen.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == o.listen.size()) {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                       "listen: expected \"host:port\", got \"" + o.listen + "\"");
    }
    if (o.max_stop < 0 || o.max_stop > 1024) {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT, "max_stop must be 0..1024");
    }
    out = std::move(o);
    return sdk::ok();
  });
}

}  // namespace tessera::grpcfe
