// Options of the "grpc" frontend plugin (the [[frontend]] entry minus `plugin`).
#pragma once

#include <string>

#include "tessera/plugin_abi.h"

namespace tessera::grpcfe {

struct GrpcOptions {
  std::string listen = "127.0.0.1:50051";  // host:port as grpc++ accepts it; port 0 picks one
  std::string port_file;                   // written with the bound port once listening
  bool reflection = false;                 // serve grpc.reflection.v1alpha
  int max_stop = 16;                       // stop strings + stop token ids per request
  std::string api_key;  // required as `authorization: Bearer <key>` metadata; empty: no key
};

extern const char* const kGrpcOptionsSchemaJson;

[[nodiscard]] ts_status parse_grpc_options(const char* options_json, GrpcOptions& out) noexcept;

}  // namespace tessera::grpcfe
