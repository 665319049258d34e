#include "generation_service.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <nlohmann/json.hpp>
#include <vector>

namespace tessera::grpcfe {

namespace {

using Json = nlohmann::json;
namespace v1 = tessera::v1;

grpc::Status status_from(ts_status s, const char* what) {
  const std::string message = s.message != nullptr ? s.message : std::string(what) + " failed";
  switch (s.code) {
    case TS_ERR_INVALID_ARGUMENT:
    case TS_ERR_UNSUPPORTED:
    case TS_ERR_NUMERIC:
    case TS_ERR_CONTEXT_LENGTH:
      return {grpc::StatusCode::INVALID_ARGUMENT, message};
    case TS_ERR_BUSY:
      return {grpc::StatusCode::RESOURCE_EXHAUSTED, message};
    case TS_ERR_UNAVAILABLE:
      return {grpc::StatusCode::UNAVAILABLE, message};
    default:
      return {grpc::StatusCode::INTERNAL, message};
  }
}

// GenerateRequest -> the engine's request JSON (same field names as the HTTP frontend sends).
Json engine_request(const v1::GenerateRequest& r) {
  Json out = Json::object();
  if (r.has_tokenized()) {
    out["prompt_token_ids"] = std::vector<std::int32_t>(r.tokenized().input_ids().begin(),
                                                        r.tokenized().input_ids().end());
  } else {
    out["prompt"] = r.text();
  }
  const auto& s = r.sampling_params();
  if (s.has_temperature()) out["temperature"] = s.temperature();
  if (s.has_top_p()) out["top_p"] = s.top_p();
  if (s.has_top_k()) out["top_k"] = s.top_k() < 0 ? 0 : s.top_k();  // -1 means off, as in SGLang
  if (s.has_min_p()) out["min_p"] = s.min_p();
  if (s.has_frequency_penalty()) out["frequency_penalty"] = s.frequency_penalty();
  if (s.has_presence_penalty()) out["presence_penalty"] = s.presence_penalty();
  if (s.has_repetition_penalty()) out["repetition_penalty"] = s.repetition_penalty();
  if (s.has_max_new_tokens()) out["max_tokens"] = s.max_new_tokens();
  if (s.stop_size() > 0) out["stop"] = std::vector<std::string>(s.stop().begin(), s.stop().end());
  if (s.stop_token_ids_size() > 0) {
    out["stop_token_ids"] =
        std::vector<std::int32_t>(s.stop_token_ids().begin(), s.stop_token_ids().end());
  }
  if (s.ignore_eos()) out["ignore_eos"] = true;
  if (s.has_skip_special_tokens()) out["skip_special_tokens"] = s.skip_special_tokens();
  if (s.has_seed()) out["seed"] = s.seed();
  return out;
}

// Events of one engine request, handed from engine threads to the handler thread.
struct EventQueue {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::string> events;

  static void on_event(void* user, const char* event_json) noexcept {
    try {
      auto* q = static_cast<EventQueue*>(user);
      // Notified under the lock: the handler returns, destroying the queue, as soon as it holds
      // the lock and sees the last event, so nothing may touch the queue after the lock is
      // released (ThreadSanitizer caught a notify on the destroyed condition variable).
      const std::lock_guard lock(q->mutex);
      q->events.emplace_back(event_json != nullptr ? event_json : "");
      q->ready.notify_one();
    } catch (...) {
      // Out of memory copying an event: nothing can be reported from an engine thread.
    }
  }
};

}  // namespace

bool GenerationService::serving() const noexcept {
  return !draining_.load() && engine_->health(engine_->ctx) == 1;
}

void GenerationService::unregister_running(const std::string& id) {
  const std::lock_guard lock(running_mutex_);
  running_.erase(id);
}

grpc::Status GenerationService::Generate(grpc::ServerContext* context,
                                         const v1::GenerateRequest* request,
                                         grpc::ServerWriter<v1::GenerateResponse>* writer) {
  if (draining_.load()) return {grpc::StatusCode::UNAVAILABLE, "the server is shutting down"};
  if (engine_->health(engine_->ctx) != 1) {
    return {grpc::StatusCode::UNAVAILABLE, "the model is still loading"};
  }
  if (request->input_case() == v1::GenerateRequest::INPUT_NOT_SET) {
    return {grpc::StatusCode::INVALID_ARGUMENT, "give 'text' or 'tokenized'"};
  }
  const auto& sp = request->sampling_params();
  if (sp.stop_size() + sp.stop_token_ids_size() > options_.max_stop) {
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "at most " + std::to_string(options_.max_stop) + " stop strings and token ids"};
  }
  const std::string id = request->request_id().empty()
                             ? "grpc-" + std::to_string(next_id_.fetch_add(1))
                             : request->request_id();
  Json engine_json = engine_request(*request);
  // Live A/B (docs/ab.md): a client-chosen request_id is the assignment key, and the
  // x-tessera-arm metadata pins an arm; the arm serving it goes back as initial metadata.
  if (!request->request_id().empty()) engine_json["request_id"] = request->request_id();
  const auto& metadata = context->client_metadata();
  if (const auto arm = metadata.find("x-tessera-arm"); arm != metadata.end()) {
    engine_json["arm"] = std::string(arm->second.data(), arm->second.size());
  }
  const std::string body = engine_json.dump(-1, ' ', false, Json::error_handler_t::replace);

  EventQueue queue;
  std::uint64_t engine_id = 0;
  {
    // Registered under the lock before submit returns so Abort can never miss it.
    const std::lock_guard lock(running_mutex_);
    if (running_.count(id) != 0) {
      return {grpc::StatusCode::ALREADY_EXISTS, "request_id '" + id + "' is already running"};
    }
    const ts_status s =
        engine_->submit(engine_->ctx, body.c_str(), &EventQueue::on_event, &queue, &engine_id);
    if (s.code != TS_OK) return status_from(s, "submit");
    running_.emplace(id, engine_id);
  }

  bool aborted = false;
  bool done = false;
  std::string finish_reason;
  Json stop_reason;
  std::string error;
  int error_status = 500;
  v1::GenerateResponse usage_holder;
  const auto abort_once = [&] {
    if (!aborted) engine_->abort(engine_->ctx, engine_id);
    aborted = true;
  };
  bool metadata_sent = false;
  while (!done) {
    std::deque<std::string> batch;
    {
      std::unique_lock lock(queue.mutex);
      queue.ready.wait_for(lock, std::chrono::milliseconds(50),
                           [&] { return !queue.events.empty(); });
      batch.swap(queue.events);
    }
    if (context->IsCancelled()) abort_once();  // client cancel, deadline or server shutdown
    for (const auto& text : batch) {
      const Json event = Json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!event.is_object()) continue;
      if (!metadata_sent) {  // initial metadata goes out with the first Write, not before
        metadata_sent = true;
        if (event.contains("arm") && event["arm"].is_string()) {
          context->AddInitialMetadata("x-tessera-arm", event["arm"].get<std::string>());
        }
      }
      const std::string type = event.value("type", "");
      if (type == "delta" && !aborted) {
        v1::GenerateResponse out;
        out.set_request_id(id);
        auto* chunk = out.mutable_chunk();
        if (event.contains("token_ids")) {
          for (const auto& t : event["token_ids"]) chunk->add_token_ids(t.get<std::int32_t>());
        }
        chunk->set_text(event.value("text", ""));
        if (!writer->Write(out)) abort_once();  // the stream is gone: stop generating
      } else if (type == "finish") {
        finish_reason = event.value("finish_reason", "");
        stop_reason = event.value("stop_reason", Json());
      } else if (type == "error") {
        error = event.value("message", "the engine failed this request");
        error_status = event.value("status", 500);
      } else if (type == "done") {
        done = true;
        auto* usage = usage_holder.mutable_complete()->mutable_usage();
        const Json u = event.value("usage", Json::object());
        usage->set_prompt_tokens(u.value("prompt_tokens", 0));
        usage->set_completion_tokens(u.value("completion_tokens", 0));
        usage->set_cached_tokens(u.value("cached_tokens", 0));
      }
    }
  }
  unregister_running(id);
  if (context->IsCancelled()) return {grpc::StatusCode::CANCELLED, "cancelled; request aborted"};

  v1::GenerateResponse last;
  last.set_request_id(id);
  if (!error.empty()) {
    last.mutable_error()->set_message(error);
    last.mutable_error()->set_http_status_code(error_status);
  } else {
    auto* complete = last.mutable_complete();
    *complete = usage_holder.complete();
    complete->set_finish_reason(finish_reason);
    if (stop_reason.is_string()) complete->set_matched_stop_str(stop_reason.get<std::string>());
    if (stop_reason.is_number_integer()) {
      complete->set_matched_token_id(stop_reason.get<std::int32_t>());
    }
  }
  writer->WriteLast(last, grpc::WriteOptions());
  return grpc::Status::OK;
}

grpc::Status GenerationService::Abort(grpc::ServerContext* /*context*/,
                                      const v1::AbortRequest* request,
                                      v1::AbortResponse* response) {
  std::uint64_t engine_id = 0;
  {
    const std::lock_guard lock(running_mutex_);
    const auto it = running_.find(request->request_id());
    if (it == running_.end()) {
      response->set_success(false);
      response->set_message("no running request has id '" + request->request_id() + "'");
      return grpc::Status::OK;
    }
    engine_id = it->second;
  }
  const ts_status s = engine_->abort(engine_->ctx, engine_id);
  if (s.code != TS_OK) return status_from(s, "abort");
  response->set_success(true);
  return grpc::Status::OK;
}

grpc::Status GenerationService::GetModelInfo(grpc::ServerContext* /*context*/,
                                             const v1::GetModelInfoRequest* /*request*/,
                                             v1::GetModelInfoResponse* response) {
  const char* text = engine_->model_info_json(engine_->ctx);
  const std::string json_text = text != nullptr ? text : "{}";  // copy: valid until next call
  const Json info = Json::parse(json_text, nullptr, false);
  if (!info.is_object()) return {grpc::StatusCode::INTERNAL, "the engine gave no model info"};
  response->set_model_id(info.value("id", ""));
  response->set_max_context(info.value("max_context", std::int64_t{0}));
  response->set_vocab_size(info.value("vocab_size", 0));
  const Json limits = info.value("limits", Json::object());
  response->set_max_new_tokens_limit(limits.value("max_tokens", std::int64_t{0}));
  response->set_default_max_new_tokens(info.value("default_max_tokens", std::int64_t{0}));
  response->set_info_json(json_text);
  return grpc::Status::OK;
}

grpc::Status GenerationService::GetTokenizer(grpc::ServerContext* /*context*/,
                                             const v1::GetTokenizerRequest* request,
                                             v1::GetTokenizerResponse* response) {
  {
    const char* text = engine_->model_info_json(engine_->ctx);
    const Json info = Json::parse(text != nullptr ? text : "{}", nullptr, false);
    if (info.is_object()) response->set_vocab_size(info.value("vocab_size", 0));
  }
  if (!request->text().empty()) {
    // The ABI's buffer convention: the full count comes back; call again when it was larger.
    std::vector<std::int32_t> ids(request->text().size() / 2 + 16);
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::int64_t n = 0;
      const ts_status s = engine_->tokenize(engine_->ctx, request->text().c_str(), ids.data(),
                                            static_cast<std::int64_t>(ids.size()), &n);
      if (s.code != TS_OK) return status_from(s, "tokenize");
      const bool fits = n <= static_cast<std::int64_t>(ids.size());
      ids.resize(static_cast<std::size_t>(n));
      if (fits) break;
    }
    for (const auto id : ids) response->add_input_ids(id);
  }
  if (request->ids_size() > 0) {
    std::vector<char> text(static_cast<std::size_t>(request->ids_size()) * 8 + 16);
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::int64_t n = 0;
      const ts_status s =
          engine_->detokenize(engine_->ctx, request->ids().data(), request->ids_size(), text.data(),
                              static_cast<std::int64_t>(text.size()), &n);
      if (s.code != TS_OK) return status_from(s, "detokenize");
      const bool fits = n <= static_cast<std::int64_t>(text.size());
      text.resize(static_cast<std::size_t>(n));
      if (fits) break;
    }
    response->set_decoded_text(std::string(text.begin(), text.end()));
  }
  return grpc::Status::OK;
}

}  // namespace tessera::grpcfe
