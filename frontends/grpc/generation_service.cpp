#include "generation_service.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "tessera/bearer_key.hpp"
#include "tessera/sampling_fields.hpp"

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
// Each sampling value is checked against its row of tessera/sampling_fields.hpp, as the HTTP
// frontend does: a NaN would otherwise be written as JSON null, which reads as "absent".
grpc::Status engine_request(const v1::GenerateRequest& r, Json& out) {
  out = Json::object();
  if (r.has_tokenized()) {
    out["prompt_token_ids"] = std::vector<std::int32_t>(r.tokenized().input_ids().begin(),
                                                        r.tokenized().input_ids().end());
  } else {
    out["prompt"] = r.text();
  }
  const auto& s = r.sampling_params();
  const auto refuse = [](std::string message) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::move(message));
  };
  const struct {
    bool given;
    float value;
    const sdk::NumberField& field;
  } numbers[] = {
      {s.has_temperature(), s.temperature(), sdk::kTemperature},
      {s.has_top_p(), s.top_p(), sdk::kTopP},
      {s.has_min_p(), s.min_p(), sdk::kMinP},
      {s.has_frequency_penalty(), s.frequency_penalty(), sdk::kFrequencyPenalty},
      {s.has_presence_penalty(), s.presence_penalty(), sdk::kPresencePenalty},
      {s.has_repetition_penalty(), s.repetition_penalty(), sdk::kRepetitionPenalty},
  };
  for (const auto& n : numbers) {
    if (!n.given) continue;
    if (!sdk::in_range(n.field, n.value)) {
      return refuse("sampling_params." + std::string(n.field.name) + " must be in " +
                    sdk::range_text(n.field) + ", got " + std::to_string(n.value));
    }
    out[std::string(n.field.name)] = n.value;
  }
  if (s.has_top_k()) {
    if (s.top_k() < sdk::kTopKOff) {
      return refuse("sampling_params.top_k must be -1 (off) or more, got " +
                    std::to_string(s.top_k()));
    }
    out["top_k"] = s.top_k() < 0 ? 0 : s.top_k();  // -1 means off, as in SGLang
  }
  if (s.has_max_new_tokens()) out["max_tokens"] = s.max_new_tokens();
  for (const auto& stop : s.stop()) {
    if (stop.empty() || stop.size() > sdk::kMaxStopBytes) {
      return refuse("sampling_params.stop strings must be 1 to " +
                    std::to_string(sdk::kMaxStopBytes) + " bytes, got " +
                    std::to_string(stop.size()));
    }
  }
  if (s.stop_size() > 0) out["stop"] = std::vector<std::string>(s.stop().begin(), s.stop().end());
  if (s.stop_token_ids_size() > 0) {
    out["stop_token_ids"] =
        std::vector<std::int32_t>(s.stop_token_ids().begin(), s.stop_token_ids().end());
  }
  if (s.ignore_eos()) out["ignore_eos"] = true;
  if (s.has_skip_special_tokens()) out["skip_special_tokens"] = s.skip_special_tokens();
  if (s.has_seed()) out["seed"] = s.seed();
  return grpc::Status::OK;
}

// A server-made request id: 128 bits from the OS's random source, so that another client can
// neither guess nor enumerate it.
std::string random_request_id() {
  std::random_device random;
  char id[5 + 32 + 1];
  std::snprintf(id, sizeof id, "grpc-%08x%08x%08x%08x", random(), random(), random(), random());
  return id;
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

grpc::Status GenerationService::check_key(const grpc::ServerContext& context) const {
  if (options_.api_key.empty()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  const std::string_view given = it == metadata.end()
                                     ? std::string_view{}
                                     : std::string_view(it->second.data(), it->second.size());
  if (sdk::authorized(given, options_.api_key)) return grpc::Status::OK;
  return {grpc::StatusCode::UNAUTHENTICATED,
          "missing or wrong API key: send 'authorization: Bearer <key>' metadata"};
}

std::string GenerationService::running_key(const grpc::ServerContext& context,
                                           const std::string& id) const {
  // With a key, every holder of it is the same client; without, a connection is one.
  const std::string owner = options_.api_key.empty() ? context.peer() : std::string("key");
  return owner + '\n' + id;
}

void GenerationService::unregister_running(const std::string& key) {
  const std::lock_guard lock(running_mutex_);
  running_.erase(key);
}

grpc::Status GenerationService::Generate(grpc::ServerContext* context,
                                         const v1::GenerateRequest* request,
                                         grpc::ServerWriter<v1::GenerateResponse>* writer) {
  if (grpc::Status key = check_key(*context); !key.ok()) return key;
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
  const std::string id =
      request->request_id().empty() ? random_request_id() : request->request_id();
  const std::string running_id = running_key(*context, id);
  Json engine_json;
  if (grpc::Status fields = engine_request(*request, engine_json); !fields.ok()) return fields;
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
    if (running_.count(running_id) != 0) {
      return {grpc::StatusCode::ALREADY_EXISTS, "request_id '" + id + "' is already running"};
    }
    const ts_status s =
        engine_->submit(engine_->ctx, body.c_str(), &EventQueue::on_event, &queue, &engine_id);
    if (s.code != TS_OK) return status_from(s, "submit");
    running_.emplace(running_id, engine_id);
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
  unregister_running(running_id);
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

grpc::Status GenerationService::Abort(grpc::ServerContext* context, const v1::AbortRequest* request,
                                      v1::AbortResponse* response) {
  if (grpc::Status key = check_key(*context); !key.ok()) return key;
  std::uint64_t engine_id = 0;
  {
    const std::lock_guard lock(running_mutex_);
    // Another owner's request is "not running" to this caller: not found, and not told apart.
    const auto it = running_.find(running_key(*context, request->request_id()));
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

grpc::Status GenerationService::GetModelInfo(grpc::ServerContext* context,
                                             const v1::GetModelInfoRequest* /*request*/,
                                             v1::GetModelInfoResponse* response) {
  if (grpc::Status key = check_key(*context); !key.ok()) return key;
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

grpc::Status GenerationService::GetTokenizer(grpc::ServerContext* context,
                                             const v1::GetTokenizerRequest* request,
                                             v1::GetTokenizerResponse* response) {
  if (grpc::Status key = check_key(*context); !key.ok()) return key;
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
