// One client connection: reads requests (head first, so limits and the API key are checked
// before any body byte is buffered), answers the small routes, and runs generation requests —
// streaming Server-Sent Events or one JSON reply — while watching the socket so a client that
// goes away aborts its engine requests at once.
//
// Threading: every member runs on the connection's strand. Engine callbacks (engine threads) only
// copy the event text and post it to the strand.
//
// Lifetime: shared_ptr, kept alive by its pending I/O and by every engine request still open (an
// EngineCall holds the session until the engine's final "done" event).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "openai_request.hpp"
#include "response_builder.hpp"
#include "router.hpp"
#include "server_state.hpp"

namespace tessera::http {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, ServerState& state);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start();
  // Drain: close now if between requests after one was served, else after the current (or
  // first) response.
  void begin_drain();
  // Drain deadline passed: abort the engine requests of this connection.
  void abort_generation();
  // Last step of stop(): close the socket whatever is happening.
  void force_close();

 private:
  // One engine request of the current HTTP request; its address is the engine's `user` pointer.
  struct EngineCall {
    std::shared_ptr<Session> session;
    std::uint64_t generation = 0;  // which HTTP request of this connection it belongs to
    std::size_t prompt_index = 0;
    std::uint64_t request_id = 0;
    bool submitted = false;
    bool abort_sent = false;
    bool done = false;
  };

  // http_session.cpp: the connection.
  void read_header();
  void on_header(beast::error_code ec);
  void on_continue_written(beast::error_code ec);
  void read_body();
  void on_body(beast::error_code ec);
  void dispatch();
  void send_reply(Reply reply, bool keep_alive);
  void after_reply(beast::error_code ec, bool keep_alive);
  void reject_and_close(const ApiError& error);
  void linger_close();
  void close();
  void watch_disconnect();
  void on_watch(beast::error_code ec, std::size_t bytes);
  void next_request();
  [[nodiscard]] bool keep_alive() const;

  // session_generation.cpp: generation requests.
  void start_generation(Route route, std::string body);
  void add_ab_headers(GenerationPlan& plan) const;
  static void on_engine_event(void* user, const char* event_json) noexcept;
  void handle_engine_event(EngineCall* call, const std::string& text);
  void after_event();
  void stream_bytes(const std::string& bytes);
  void finish_stream();
  void fail_before_output(const ApiError& error);
  void flush_stream();
  void on_stream_written(beast::error_code ec);
  void end_generation();
  void abort_calls();
  void release_call(EngineCall* call);
  [[nodiscard]] std::string stream_head() const;

  beast::tcp_stream stream_;
  ServerState& state_;
  beast::flat_buffer buffer_;
  std::optional<beast::http::request_parser<beast::http::string_body>> parser_;
  GateDecision decision_;
  bool head_request_ = false;
  bool closed_ = false;
  bool idle_ = true;  // between requests (safe to close on drain)
  bool served_ = false;  // a request was read: during a drain no further one is

  // Disconnect watch while a generation runs.
  bool watching_ = false;
  bool resume_after_watch_ = false;

  // Generation state.
  std::uint64_t generation_ = 0;
  bool generating_ = false;
  std::optional<GenerationPlan> plan_;
  std::optional<ResponseBuilder> builder_;
  std::vector<std::unique_ptr<EngineCall>> calls_;
  bool stream_mode_ = false;
  bool stream_started_ = false;  // response head sent
  bool stream_chunked_ = true;   // HTTP/1.1 chunked; HTTP/1.0 gets raw bytes + close
  bool stream_closing_ = false;  // terminal chunk queued
  std::string pending_;          // queued stream bytes
  std::string in_flight_;        // bytes being written
  bool writing_ = false;
  bool aborted_ = false;
  std::string arm_;  // the live A/B arm serving this generation (from its events), or empty
};

}  // namespace tessera::http
