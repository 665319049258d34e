// What every connection of one HTTP frontend shares: options, the engine, the route gate, the
// metrics, the drain flag and the set of live sessions (so a drain can reach them). Owned by
// HttpServer; sessions hold a reference and never outlive the server's stop().
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "basic_routes.hpp"
#include "http_metrics.hpp"
#include "http_options.hpp"
#include "router.hpp"
#include "tessera/plugin_sdk.hpp"

namespace tessera::http {

class Session;

struct ServerState {
  HttpOptions options;
  ServerContext ctx;
  GateOptions gate;
  HttpMetrics metrics;
  sdk::Logger logger;
  std::atomic<bool> draining{false};
  // HTTP requests whose generation is still running (drain waits for 0).
  std::atomic<std::int64_t> active_generations{0};
  // Engine requests submitted and not yet answered with their final "done" event.
  std::atomic<std::int64_t> open_engine_calls{0};

  void add_session(Session* key, const std::shared_ptr<Session>& session);
  void remove_session(Session* key);
  [[nodiscard]] std::vector<std::shared_ptr<Session>> live_sessions();

 private:
  std::mutex sessions_mutex_;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions_;
};

}  // namespace tessera::http
