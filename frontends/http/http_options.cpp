#include "http_options.hpp"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "tessera/plugin_sdk.hpp"

namespace tessera::http {

const char* const kHttpOptionsSchemaJson = R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "listen": {"type": "string", "default": "127.0.0.1:8000",
      "description": "host:port to listen on (IPv4, [IPv6] or a name); port 0 picks a free one"},
    "threads": {"type": "integer", "minimum": 1, "maximum": 256, "default": 2,
      "description": "I/O threads; each serves thousands of connections"},
    "api_key": {"type": "string", "default": "",
      "description": "required as 'Authorization: Bearer <key>' on every path but auth_exempt_paths; empty: no key"},
    "api_key_env": {"type": "string", "default": "",
      "description": "name of an environment variable holding the key (wins over api_key when set and non-empty)"},
    "auth_exempt_paths": {"type": "array", "items": {"type": "string"},
      "default": ["/health", "/ready", "/metrics"],
      "description": "exact paths served without the key"},
    "cors_allowed_origins": {"type": "array", "items": {"type": "string"}, "default": [],
      "description": "origins allowed by CORS (exact, or \"*\"); empty: CORS off"},
    "max_header_bytes": {"type": "integer", "minimum": 1024, "maximum": 1048576, "default": 16384,
      "description": "request line + headers; beyond it 431"},
    "max_connections": {"type": "integer", "minimum": 1, "maximum": 1000000, "default": 10000,
      "description": "open connections; beyond it new ones are closed at once"},
    "max_stop": {"type": "integer", "minimum": 0, "maximum": 1024, "default": 16,
      "description": "stop strings (and stop token ids) per request"},
    "max_prompts": {"type": "integer", "minimum": 1, "maximum": 4096, "default": 64,
      "description": "prompts in one /v1/completions request"},
    "idle_timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 86400, "default": 60,
      "description": "keep-alive idle time and the time allowed to send a request"},
    "max_buffered_bytes": {"type": "integer", "minimum": 65536, "maximum": 1073741824, "default": 8388608,
      "description": "response bytes queued for one slow reader before its request is aborted"},
    "port_file": {"type": "string", "default": "",
      "description": "file written with the bound port once listening (for port 0)"}
  }
})json";

namespace {

ts_status parse_listen(const std::string& listen, HttpOptions& out) {
  std::string host;
  std::string port;
  if (!listen.empty() && listen.front() == '[') {  // [v6]:port
    const auto close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                       "listen: expected \"[address]:port\", got \"" + listen + "\"");
    }
    host = listen.substr(1, close - 1);
    port = listen.substr(close + 2);
  } else {
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                       "listen: expected \"host:port\", got \"" + listen + "\"");
    }
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  char* end = nullptr;
  const long value = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || end == nullptr || *end != '\0' || value < 0 || value > 65535) {
    return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                     "listen: port must be 0..65535, got \"" + port + "\"");
  }
  out.host = host;
  out.port = static_cast<std::uint16_t>(value);
  return sdk::ok();
}

}  // namespace

ts_status parse_http_options(const char* options_json, HttpOptions& out) noexcept {
  return sdk::guarded([&]() -> ts_status {
    const auto j = nlohmann::json::parse(options_json ? options_json : "{}", nullptr, false);
    if (!j.is_object()) return sdk::fail(TS_ERR_INVALID_ARGUMENT, "options must be a JSON object");
    HttpOptions o;
    try {
      if (ts_status s = parse_listen(j.value("listen", std::string("127.0.0.1:8000")), o);
          s.code != TS_OK) {
        return s;
      }
      o.threads = j.value("threads", 2);
      o.api_key = j.value("api_key", std::string());
      const std::string env = j.value("api_key_env", std::string());
      if (!env.empty()) {
        const char* value = std::getenv(env.c_str());
        if (value != nullptr && *value != '\0') o.api_key = value;
      }
      if (j.contains("auth_exempt_paths")) {
        o.auth_exempt_paths = j["auth_exempt_paths"].get<std::vector<std::string>>();
      }
      o.cors_allowed_origins = j.value("cors_allowed_origins", std::vector<std::string>{});
      o.max_header_bytes = j.value("max_header_bytes", o.max_header_bytes);
      o.max_connections = j.value("max_connections", o.max_connections);
      o.max_stop = j.value("max_stop", o.max_stop);
      o.max_prompts = j.value("max_prompts", o.max_prompts);
      o.idle_timeout_s = j.value("idle_timeout_s", o.idle_timeout_s);
      o.max_buffered_bytes = j.value("max_buffered_bytes", o.max_buffered_bytes);
      o.port_file = j.value("port_file", std::string());
    } catch (const nlohmann::json::exception& e) {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT, std::string("options: ") + e.what());
    }
    if (o.threads < 1 || o.threads > 256) {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT, "threads must be 1..256");
    }
    if (!(o.idle_timeout_s > 0))
      return sdk::fail(TS_ERR_INVALID_ARGUMENT, "idle_timeout_s must be > 0");
    out = std::move(o);
    return sdk::ok();
  });
}

}  // namespace tessera::http
