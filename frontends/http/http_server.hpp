// The HTTP frontend instance: an Asio io_context run by `threads` threads, one acceptor, and a
// Session per connection. start() binds and returns; stop(deadline) drains (docs/http.md,
// "Drain"): stop accepting, close idle keep-alive connections, let running generations finish
// until the deadline, abort the rest, wait for the engine's final events, close, join.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "server_state.hpp"

namespace tessera::http {

class HttpServer {
 public:
  HttpServer(HttpOptions options, const ts_host_api* host);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  [[nodiscard]] ts_status start(const ts_engine_api* engine);
  [[nodiscard]] ts_status stop(std::int64_t deadline_ms);

 private:
  void accept_next();
  void shut_down_threads();

  ServerState state_;
  boost::asio::io_context ioc_;
  std::optional<boost::asio::ip::tcp::acceptor> acceptor_;
  std::vector<std::thread> threads_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace tessera::http
