#include "http_session.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <chrono>

namespace tessera::http {

namespace bhttp = beast::http;

namespace {

Method method_of(bhttp::verb verb) {
  switch (verb) {
    case bhttp::verb::get:
      return Method::kGet;
    case bhttp::verb::head:
      return Method::kHead;
    case bhttp::verb::post:
      return Method::kPost;
    case bhttp::verb::options:
      return Method::kOptions;
    default:
      return Method::kOther;
  }
}

std::chrono::milliseconds idle_timeout(const HttpOptions& o) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(o.idle_timeout_s * 1000));
}

ApiError status_error(unsigned status, std::string message) {
  ApiError e;
  e.status = status;
  e.message = std::move(message);
  return e;
}

}  // namespace

Session::Session(tcp::socket socket, ServerState& state)
    : stream_(std::move(socket)), state_(state) {
  state_.metrics.connection_opened();
}

Session::~Session() {
  state_.metrics.connection_closed();
  state_.remove_session(this);
}

void Session::start() {
  state_.add_session(this, shared_from_this());
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
}

bool Session::keep_alive() const {
  return parser_ && parser_->get().keep_alive() && !state_.draining.load();
}

void Session::read_header() {
  if (closed_) return;
  // During a drain a connection gets one request (a probe: /health, /ready), never a second.
  if (state_.draining.load() && served_) return close();
  idle_ = true;
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(state_.options.max_header_bytes));
  parser_->body_limit(static_cast<std::uint64_t>(state_.ctx.max_body_bytes));
  stream_.expires_after(idle_timeout(state_.options));
  bhttp::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
}

void Session::on_header(beast::error_code ec) {
  if (closed_) return;
  if (ec == bhttp::error::end_of_stream || ec == net::error::eof ||
      ec == net::error::operation_aborted || ec == beast::error::timeout ||
      ec == net::error::connection_reset) {
    return close();
  }
  idle_ = false;
  served_ = true;
  if (ec == bhttp::error::header_limit) {
    state_.metrics.count_request(nullptr, 431);
    return reject_and_close(status_error(
        431,
        "request headers exceed " + std::to_string(state_.options.max_header_bytes) + " bytes"));
  }
  if (ec == bhttp::error::body_limit) {
    state_.metrics.count_request(nullptr, 413);
    ApiError e = status_error(413, "request body exceeds the limit of " +
                                       std::to_string(state_.ctx.max_body_bytes) + " bytes");
    e.code = "request_too_large";
    return reject_and_close(e);
  }
  if (ec == bhttp::error::bad_transfer_encoding) {  // a coding other than chunked last
    state_.metrics.count_request(nullptr, 501);
    return reject_and_close(
        status_error(501, "Transfer-Encoding is not implemented (only chunked): " + ec.message()));
  }
  if (ec) {
    state_.metrics.count_request(nullptr, 400);
    return reject_and_close(status_error(400, "malformed HTTP request: " + ec.message()));
  }
  const auto& req = parser_->get();
  GateInput in;
  in.method = method_of(req.method());
  head_request_ = in.method == Method::kHead;
  const auto target = req.target();
  in.target = std::string_view(target.data(), target.size());
  const auto auth = req[bhttp::field::authorization];
  in.authorization = std::string_view(auth.data(), auth.size());
  const auto origin = req[bhttp::field::origin];
  in.origin = std::string_view(origin.data(), origin.size());
  in.http11 = req.version() >= 11;
  in.has_host = req.find(bhttp::field::host) != req.end();
  const auto transfer_encoding = req[bhttp::field::transfer_encoding];
  in.transfer_encoding = std::string_view(transfer_encoding.data(), transfer_encoding.size());
  const auto content_encoding = req[bhttp::field::content_encoding];
  in.content_encoding = std::string_view(content_encoding.data(), content_encoding.size());
  decision_ = decide(in, state_.gate);
  if (decision_.kind == GateDecision::Kind::kReject) {
    const Route* route = nullptr;
    state_.metrics.count_request(route, decision_.status);
    ApiError e = status_error(decision_.status, decision_.message);
    if (decision_.status == 401) e.code = "invalid_api_key";
    if (!parser_->is_done()) return reject_and_close(e);  // body unread: do not reuse
    Reply reply = error_reply(e);
    if (!decision_.allow.empty()) reply.headers.emplace_back("Allow", decision_.allow);
    return send_reply(std::move(reply), keep_alive());
  }
  const auto expect = req[bhttp::field::expect];
  if (!parser_->is_done() && beast::iequals(expect, "100-continue")) {
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    return net::async_write(stream_, net::buffer(kContinue),
                            [self = shared_from_this()](beast::error_code e, std::size_t) {
                              self->on_continue_written(e);
                            });
  }
  read_body();
}

void Session::on_continue_written(beast::error_code ec) {
  if (ec) return close();
  read_body();
}

void Session::read_body() {
  stream_.expires_after(idle_timeout(state_.options));
  bhttp::async_read(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
}

void Session::on_body(beast::error_code ec) {
  if (closed_) return;
  if (ec == bhttp::error::body_limit) {
    state_.metrics.count_request(&decision_.match.route, 413);
    ApiError e = status_error(413, "request body exceeds the limit of " +
                                       std::to_string(state_.ctx.max_body_bytes) + " bytes");
    e.code = "request_too_large";
    return reject_and_close(e);
  }
  if (ec == bhttp::error::bad_chunk || ec == bhttp::error::bad_chunk_extension) {
    // e.g. a negative or non-hex chunk size: answered before the connection closes.
    state_.metrics.count_request(&decision_.match.route, 400);
    return reject_and_close(status_error(400, "malformed chunked body: " + ec.message()));
  }
  if (ec) return close();
  dispatch();
}

void Session::dispatch() {
  stream_.expires_never();
  const Route route = decision_.match.route;
  if (decision_.kind == GateDecision::Kind::kPreflight) {
    Reply r;
    r.status = 204;
    r.content_type.clear();
    r.headers = {{"Access-Control-Allow-Methods", decision_.allow},
                 {"Access-Control-Allow-Headers", "Authorization, Content-Type"},
                 {"Access-Control-Max-Age", "600"}};
    return send_reply(std::move(r), keep_alive());
  }
  std::string body = std::move(parser_->get().body());
  Reply reply;
  try {
    switch (route) {
      case Route::kChatCompletions:
      case Route::kCompletions:
        return start_generation(route, std::move(body));
      case Route::kModels:
        reply = handle_models(state_.ctx);
        break;
      case Route::kModel:
        reply = handle_model(state_.ctx, decision_.match.model_id);
        break;
      case Route::kTokenize:
        reply = handle_tokenize(state_.ctx, body);
        break;
      case Route::kDetokenize:
        reply = handle_detokenize(state_.ctx, body);
        break;
      case Route::kHealth:
        reply = handle_health();
        break;
      case Route::kReady:
        reply = handle_ready(state_.ctx);
        break;
      case Route::kMetrics:
        reply = handle_metrics(state_.ctx);
        break;
      case Route::kAbReport:
        reply = handle_ab_report(state_.ctx);
        break;
    }
  } catch (const RequestError& e) {
    reply = error_reply(e.error());
  } catch (const std::exception& e) {
    reply = error_reply(status_error(500, std::string("internal error: ") + e.what()));
  }
  state_.metrics.count_request(&route, reply.status);
  send_reply(std::move(reply), keep_alive());
}

void Session::send_reply(Reply reply, bool keep) {
  const auto& req = parser_->get();
  auto res = std::make_shared<bhttp::response<bhttp::string_body>>();
  res->version(req.version() == 10 ? 10 : 11);
  res->result(reply.status);
  res->set(bhttp::field::server, "tessera");
  if (!reply.content_type.empty()) res->set(bhttp::field::content_type, reply.content_type);
  for (const auto& [name, value] : reply.headers) res->set(name, value);
  if (!decision_.cors_origin.empty()) {
    res->set(bhttp::field::access_control_allow_origin, decision_.cors_origin);
    res->set(bhttp::field::vary, "Origin");
  }
  res->keep_alive(keep);
  res->body() = std::move(reply.body);
  res->prepare_payload();
  if (head_request_) res->body().clear();  // Content-Length stays that of the GET body
  stream_.expires_after(idle_timeout(state_.options));
  bhttp::async_write(stream_, *res,
                     [self = shared_from_this(), res, keep](beast::error_code ec, std::size_t) {
                       self->after_reply(ec, keep);
                     });
}

void Session::after_reply(beast::error_code ec, bool keep) {
  if (ec || !keep) return close();
  next_request();
}

void Session::next_request() {
  // A disconnect watch may still be reading; the next request is read once it has stopped.
  if (watching_) {
    resume_after_watch_ = true;
    beast::error_code ignored;
    stream_.socket().cancel(ignored);
    return;
  }
  read_header();
}

void Session::reject_and_close(const ApiError& error) {
  // The request (or its body) was not read: answer, then discard what the client still sends
  // so it can read the answer instead of a connection reset.
  Reply reply = error_reply(error);
  const auto& req = parser_->get();
  auto res = std::make_shared<bhttp::response<bhttp::string_body>>();
  res->version(req.version() == 10 ? 10 : 11);
  res->result(reply.status);
  res->set(bhttp::field::server, "tessera");
  res->set(bhttp::field::content_type, reply.content_type);
  for (const auto& [name, value] : reply.headers) res->set(name, value);
  res->keep_alive(false);
  res->body() = std::move(reply.body);
  res->prepare_payload();
  stream_.expires_after(idle_timeout(state_.options));
  bhttp::async_write(stream_, *res,
                     [self = shared_from_this(), res](beast::error_code ec, std::size_t) {
                       if (ec) return self->close();
                       self->linger_close();
                     });
}

void Session::linger_close() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  // Read and drop for a few seconds at most.
  stream_.expires_after(std::chrono::seconds(5));
  auto sink = std::make_shared<std::array<char, 65536>>();
  auto drain = std::make_shared<std::function<void(beast::error_code, std::size_t)>>();
  *drain = [self = shared_from_this(), sink, drain](beast::error_code ec, std::size_t) {
    if (ec) {
      *drain = nullptr;  // break the self-reference
      return self->close();
    }
    self->stream_.async_read_some(net::buffer(*sink), *drain);
  };
  stream_.async_read_some(net::buffer(*sink), *drain);
}

void Session::close() {
  if (closed_) return;
  closed_ = true;
  abort_calls();
  end_generation();
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
}

void Session::watch_disconnect() {
  if (watching_ || closed_) return;
  watching_ = true;
  stream_.async_read_some(
      buffer_.prepare(4096),
      [self = shared_from_this()](beast::error_code ec, std::size_t n) { self->on_watch(ec, n); });
}

void Session::on_watch(beast::error_code ec, std::size_t bytes) {
  watching_ = false;
  if (!ec) {
    buffer_.commit(bytes);  // a pipelined request: kept for the next read; stop watching
  } else if (ec != net::error::operation_aborted) {
    if (generating_) state_.metrics.client_disconnected();
    return close();
  }
  if (resume_after_watch_) {
    resume_after_watch_ = false;
    read_header();
  }
}

void Session::begin_drain() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    // A connection that has not sent its first request yet is not idle but on its way: it
    // keeps its one request (a probe's answer), as read_header allows.
    if (self->idle_ && self->served_ && !self->generating_) self->close();
  });
}

void Session::abort_generation() {
  net::post(stream_.get_executor(), [self = shared_from_this()] { self->abort_calls(); });
}

void Session::force_close() {
  net::post(stream_.get_executor(), [self = shared_from_this()] { self->close(); });
}

}  // namespace tessera::http
