// Session: the generation routes (/v1/chat/completions, /v1/completions). See http_session.hpp.
#include <fmt/format.h>

#include <boost/asio/post.hpp>
#include <chrono>

#include "http_session.hpp"

namespace tessera::http {

namespace bhttp = beast::http;

namespace {

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string chunk(const std::string& bytes) {
  return fmt::format("{:x}\r\n", bytes.size()) + bytes + "\r\n";
}

}  // namespace

void Session::start_generation(Route route, std::string body) {
  const auto health = state_.ctx.engine.health();
  if (state_.draining.load() || health != EngineHealth::kReady) {
    ApiError e;
    e.status = 503;
    e.message = health == EngineHealth::kLoading ? "the model is still loading"
                                                 : "the server is shutting down";
    e.retry_after_s = 5;
    state_.metrics.count_request(&route, 503);
    return send_reply(error_reply(e), false);
  }
  GenerationPlan plan;
  try {
    plan = route == Route::kChatCompletions
               ? parse_chat_request(body, state_.ctx.limits, state_.ctx.model_name)
               : parse_completion_request(body, state_.ctx.limits, state_.ctx.model_name);
    for (std::size_t i = 0; plan.echo && i < plan.echo_texts.size(); ++i) {
      if (!plan.echo_texts[i].empty()) {
        continue;  // token-id prompt: echo its text
      }
      const auto request = Json::parse(plan.engine_requests[i]);
      plan.echo_texts[i] = state_.ctx.engine.detokenize(
          request["prompt_token_ids"].get<std::vector<std::int32_t>>());
    }
  } catch (const RequestError& e) {
    state_.metrics.count_request(&route, e.error().status);
    return send_reply(error_reply(e.error()), keep_alive());
  }
  add_ab_headers(plan);

  ++generation_;
  generating_ = true;
  state_.active_generations.fetch_add(1);
  stream_mode_ = plan.stream;
  stream_started_ = false;
  stream_closing_ = false;
  stream_chunked_ = parser_->get().version() >= 11;
  aborted_ = false;
  arm_.clear();
  pending_.clear();
  plan_ = std::move(plan);
  builder_.emplace(*plan_, random_id(plan_->kind == ApiKind::kChat ? "chatcmpl-" : "cmpl-", 32),
                   unix_now());
  for (std::size_t i = 0; i < plan_->engine_requests.size(); ++i) {
    auto call = std::make_unique<EngineCall>();
    call->session = shared_from_this();
    call->generation = generation_;
    call->prompt_index = i;
    EngineCall* raw = call.get();
    calls_.push_back(std::move(call));
    const auto refused = state_.ctx.engine.submit(plan_->engine_requests[i],
                                                  &Session::on_engine_event, raw, &raw->request_id);
    if (refused) {
      calls_.pop_back();
      return fail_before_output(*refused);
    }
    raw->submitted = true;
    state_.open_engine_calls.fetch_add(1);
  }
  watch_disconnect();
}

// Live A/B (docs/ab.md): X-Tessera-Arm pins the arm, X-Request-Id is the assignment key when the
// body has no `user`. The engine checks both; they go through as JSON strings.
void Session::add_ab_headers(GenerationPlan& plan) const {
  const auto& req = parser_->get();
  const std::string arm(req["X-Tessera-Arm"]);
  const std::string request_id(req["X-Request-Id"]);
  if (arm.empty() && request_id.empty()) {
    return;
  }
  for (auto& text : plan.engine_requests) {
    Json request = Json::parse(text);
    if (!arm.empty()) {
      request["arm"] = arm;
    }
    if (!request_id.empty()) {
      request["request_id"] = request_id;
    }
    text = request.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

void Session::on_engine_event(void* user, const char* event_json) noexcept {
  // Engine thread: copy and hand over to the connection's strand; nothing else.
  try {
    auto* call = static_cast<EngineCall*>(user);
    net::post(call->session->stream_.get_executor(),
              [call, text = std::string(event_json != nullptr ? event_json : "")] {
                call->session->handle_engine_event(call, text);
              });
  } catch (...) {
    // Out of memory while copying an event: the request will be missing output; nothing can
    // be reported from an engine thread.
  }
}

void Session::handle_engine_event(EngineCall* call, const std::string& text) {
  const auto self = shared_from_this();  // release_call may drop the last other owner
  const Json event = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  const std::string type = string_member(event, "type");
  const bool done = type == "done";
  const bool error = type == "error";
  if (arm_.empty()) {
    arm_ = string_member(event, "arm");
  }
  if (done) {
    call->done = true;
  }
  try {
    if (generating_ && call->generation == generation_ && builder_) {
      const std::string bytes = builder_->on_event(call->prompt_index, event);
      if (builder_->failure() && !stream_started_) {
        fail_before_output(*builder_->failure());
      } else {
        if (stream_mode_ && !bytes.empty()) {
          stream_bytes(bytes);
        }
        if (error) {
          abort_calls();  // in-band error sent: stop the other choices too
        }
        if (builder_->complete()) {
          if (stream_mode_) {
            finish_stream();
          } else {
            state_.metrics.count_request(&decision_.match.route, 200);
            Reply reply;
            reply.body = builder_->final_body();
            if (!arm_.empty()) {
              reply.headers.emplace_back("X-Tessera-Arm", arm_);
            }
            end_generation();
            send_reply(std::move(reply), keep_alive());
          }
        }
      }
    }
  } catch (const std::exception& e) {
    // Never let an exception leave an Asio handler: this connection goes, the server stays.
    state_.logger.error(std::string("dropping a connection after an internal error: ") + e.what());
    close();
  }
  if (done) {
    release_call(call);
  }
}

void Session::fail_before_output(const ApiError& error) {
  abort_calls();
  state_.metrics.count_request(&decision_.match.route, error.status);
  end_generation();
  if (closed_) {
    return;
  }
  send_reply(error_reply(error), keep_alive());
}

std::string Session::stream_head() const {
  std::string head = parser_->get().version() >= 11 ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.0 200 OK\r\n";
  head += "Server: tessera\r\n";
  head += "Content-Type: text/event-stream; charset=utf-8\r\n";
  head += "Cache-Control: no-cache\r\n";
  head += "X-Accel-Buffering: no\r\n";
  if (!arm_.empty()) {
    head += "X-Tessera-Arm: " + arm_ + "\r\n";
  }
  if (!decision_.cors_origin.empty()) {
    head += "Access-Control-Allow-Origin: " + decision_.cors_origin + "\r\nVary: Origin\r\n";
  }
  if (stream_chunked_) {
    head += "Transfer-Encoding: chunked\r\n";
  }
  head += keep_alive() && stream_chunked_ ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  head += "\r\n";
  return head;
}

void Session::stream_bytes(const std::string& bytes) {
  if (closed_) {
    return;
  }
  if (!stream_started_) {
    stream_started_ = true;
    state_.metrics.stream_started();
    state_.metrics.count_request(&decision_.match.route, 200);
    pending_ += stream_head();
  }
  if (!bytes.empty()) {
    pending_ += stream_chunked_ ? chunk(bytes) : bytes;
  }
  if (pending_.size() > static_cast<std::size_t>(state_.options.max_buffered_bytes)) {
    // The client reads slower than we generate, by megabytes: cut it off rather than buffer
    // without bound.
    state_.logger.warn("closing a stream whose client fell " + std::to_string(pending_.size()) +
                       " bytes behind");
    return close();
  }
  flush_stream();
}

void Session::finish_stream() {
  if (stream_closing_ || closed_) {
    return;
  }
  stream_bytes(builder_->stream_tail());
  if (closed_) {
    return;
  }
  stream_closing_ = true;
  if (stream_chunked_) {
    pending_ += "0\r\n\r\n";
  }
  flush_stream();
}

void Session::flush_stream() {
  if (writing_ || pending_.empty() || closed_) {
    return;
  }
  in_flight_.swap(pending_);
  pending_.clear();
  writing_ = true;
  net::async_write(stream_, net::buffer(in_flight_),
                   [self = shared_from_this()](beast::error_code ec, std::size_t) {
                     self->on_stream_written(ec);
                   });
}

void Session::on_stream_written(beast::error_code ec) {
  writing_ = false;
  in_flight_.clear();
  if (ec) {
    if (generating_) {
      state_.metrics.client_disconnected();
    }
    return close();
  }
  if (!pending_.empty()) {
    return flush_stream();
  }
  if (stream_closing_ && generating_) {
    const bool keep = keep_alive() && stream_chunked_;
    end_generation();
    if (keep) {
      return next_request();
    }
    close();
  }
}

void Session::end_generation() {
  if (!generating_) {
    return;
  }
  generating_ = false;
  if (stream_started_) {
    state_.metrics.stream_ended();
  }
  stream_started_ = false;
  stream_closing_ = false;
  builder_.reset();
  plan_.reset();
  state_.active_generations.fetch_sub(1);
}

void Session::abort_calls() {
  aborted_ = true;
  for (const auto& call : calls_) {
    if (call->submitted && !call->done && !call->abort_sent) {
      call->abort_sent = true;
      state_.ctx.engine.abort(call->request_id);
    }
  }
}

void Session::release_call(EngineCall* call) {
  for (auto it = calls_.begin(); it != calls_.end(); ++it) {
    if (it->get() == call) {
      if ((*it)->submitted) {
        state_.open_engine_calls.fetch_sub(1);
      }
      calls_.erase(it);  // drops the call's hold on this session
      return;
    }
  }
}

}  // namespace tessera::http
