// Options of one [[frontend]] entry with plugin = "http" (every key besides `plugin`). The JSON
// Schema below is what the host validates before create(); docs/http.md renders it as a table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/plugin_abi.h"

namespace tessera::http {

struct HttpOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;  // 0: the OS picks a free port (see port_file)
  int threads = 2;
  std::string api_key;  // resolved from api_key or the api_key_env variable
  std::vector<std::string> auth_exempt_paths{"/health", "/ready", "/metrics"};
  std::vector<std::string> cors_allowed_origins;  // empty: CORS off
  std::int64_t max_header_bytes = 16 * 1024;
  std::int64_t max_connections = 10000;
  std::int64_t max_stop = 16;
  std::int64_t max_prompts = 64;
  double idle_timeout_s = 60;                 // keep-alive and slow request heads/bodies
  std::int64_t max_buffered_bytes = 8 << 20;  // per stream; a reader this far behind is cut off
  std::string port_file;                      // written with the bound port once listening
};

extern const char* const kHttpOptionsSchemaJson;

// Parses options (already validated by the host, but checked again: a plugin never trusts its
// input). On failure returns a status naming the key.
[[nodiscard]] ts_status parse_http_options(const char* options_json, HttpOptions& out) noexcept;

}  // namespace tessera::http
