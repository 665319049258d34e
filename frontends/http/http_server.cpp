#include "http_server.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <fstream>

#include "http_session.hpp"

namespace tessera::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// Waits (polling; drains are rare) until pred() or the deadline.
template <class Pred>
bool wait_until(std::chrono::steady_clock::time_point deadline, Pred pred) {
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace

HttpServer::HttpServer(HttpOptions options, const ts_host_api* host) {
  state_.options = std::move(options);
  state_.logger = sdk::Logger(host, "http");
  state_.gate.api_key = state_.options.api_key;
  state_.gate.exempt_paths = state_.options.auth_exempt_paths;
  state_.gate.cors_origins = state_.options.cors_allowed_origins;
  state_.ctx.metrics = &state_.metrics;
}

HttpServer::~HttpServer() {
  if (started_ && !stopped_) (void)stop(0);
}

ts_status HttpServer::start(const ts_engine_api* engine) {
  return sdk::guarded([&]() -> ts_status {
    if (started_) return sdk::fail(TS_ERR_INVALID_ARGUMENT, "start: already started");
    if (engine == nullptr || engine->submit == nullptr) {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT, "start: no engine table");
    }
    state_.ctx.engine = EngineClient(engine);
    state_.ctx.load_model_info(state_.options.max_stop, state_.options.max_prompts);
    // A non-streaming body is sent whole: it may not be estimated larger than what a stream may
    // hold unsent (openai_request.cpp, check_response_size).
    state_.ctx.limits.max_response_bytes = state_.options.max_buffered_bytes;

    tcp::resolver resolver(ioc_);
    boost::system::error_code ec;
    const auto endpoints =
        resolver.resolve(state_.options.host, std::to_string(state_.options.port),
                         tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || endpoints.empty()) {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                       "listen: cannot resolve \"" + state_.options.host + "\": " + ec.message());
    }
    const tcp::endpoint endpoint = endpoints.begin()->endpoint();
    acceptor_.emplace(net::make_strand(ioc_));  // accept and close never race
    if (acceptor_->open(endpoint.protocol(), ec) ||
        acceptor_->set_option(net::socket_base::reuse_address(true), ec) ||
        acceptor_->bind(endpoint, ec) ||
        acceptor_->listen(net::socket_base::max_listen_connections, ec)) {
      const std::string what = "listen on " + state_.options.host + ":" +
                               std::to_string(state_.options.port) + ": " + ec.message();
      acceptor_.reset();
      return sdk::fail(TS_ERR_UNSUPPORTED, what);
    }
    const auto bound = acceptor_->local_endpoint();
    if (!state_.options.port_file.empty()) {
      std::ofstream out(state_.options.port_file, std::ios::trunc);
      out << bound.port() << "\n";
      if (!out) {
        return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                         "cannot write port_file " + state_.options.port_file);
      }
    }
    accept_next();
    threads_.reserve(static_cast<std::size_t>(state_.options.threads));
    for (int i = 0; i < state_.options.threads; ++i) {
      threads_.emplace_back([this] { ioc_.run(); });
    }
    started_ = true;
    state_.logger.info("listening on http://" + bound.address().to_string() + ":" +
                       std::to_string(bound.port()) + " (model \"" + state_.ctx.model_name +
                       "\", " + std::to_string(state_.options.threads) + " threads" +
                       (state_.options.api_key.empty() ? "" : ", API key required") + ")");
    state_.logger.info("try: curl http://" + bound.address().to_string() + ":" +
                       std::to_string(bound.port()) + "/v1/chat/completions" +
                       (state_.options.api_key.empty() ? "" : " -H 'Authorization: Bearer $KEY'") +
                       " -H 'Content-Type: application/json' -d '{\"messages\": [{\"role\": "
                       "\"user\", \"content\": \"Hello!\"}]}'");
    return sdk::ok();
  });
}

void HttpServer::accept_next() {
  acceptor_->async_accept(
      net::make_strand(ioc_), [this](boost::system::error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted || !acceptor_->is_open()) return;
        if (!ec) {
          // Still accepted while draining: probes get their answer (/ready 503 "draining",
          // /health 200), new work the engine's 503, then the connection closes.
          if (state_.metrics.open_connections() >= state_.options.max_connections) {
            boost::system::error_code ignored;
            socket.close(ignored);
          } else {
            boost::system::error_code ignored;
            socket.set_option(tcp::no_delay(true), ignored);  // SSE frames are small and urgent
            std::make_shared<Session>(std::move(socket), state_)->start();
          }
        }
        accept_next();
      });
}

ts_status HttpServer::stop(std::int64_t deadline_ms) {
  return sdk::guarded([&]() -> ts_status {
    if (!started_ || stopped_) return sdk::ok();
    stopped_ = true;
    const auto t0 = std::chrono::steady_clock::now();
    const auto deadline = t0 + std::chrono::milliseconds(deadline_ms > 0 ? deadline_ms : 0);
    // 1. Idle keep-alive connections are closed, busy ones close after their response
    //    (keep_alive() is false from now on). The listener stays open, so load balancers keep
    //    getting /ready 503 "draining" and /health 200 instead of a refused connection.
    state_.draining.store(true);
    for (const auto& s : state_.live_sessions()) s->begin_drain();
    // 2. Let running generations finish.
    const bool finished =
        wait_until(deadline, [&] { return state_.active_generations.load() == 0; });
    if (!finished) {
      state_.logger.warn("drain deadline passed with " +
                         std::to_string(state_.active_generations.load()) +
                         " generations running: aborting them");
      for (const auto& s : state_.live_sessions()) s->abort_generation();
    }
    // The last stream has ended (or was aborted): stop accepting.
    net::post(acceptor_->get_executor(), [this] {
      boost::system::error_code ignored;
      if (acceptor_) acceptor_->close(ignored);
    });
    // 3. Every submitted engine request must deliver its final event before the sessions go.
    const bool engine_done = wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(10),
                                        [&] { return state_.open_engine_calls.load() == 0; });
    if (!engine_done) {
      state_.logger.error(std::to_string(state_.open_engine_calls.load()) +
                          " engine requests never sent their final event");
    }
    for (const auto& s : state_.live_sessions()) s->force_close();
    wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(2),
               [&] { return state_.metrics.open_connections() == 0; });
    shut_down_threads();
    // The close posted in step 1 may never have run: ioc_.stop() drops queued handlers. With the
    // threads joined nothing else touches the acceptor, so close it here for certain.
    if (acceptor_) {
      boost::system::error_code ignored;
      acceptor_->close(ignored);
    }
    state_.logger.info("stopped");
    return sdk::ok();
  });
}

void HttpServer::shut_down_threads() {
  ioc_.stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

}  // namespace tessera::http
