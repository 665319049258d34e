#include "serve/serving_api.hpp"

#include <fmt/format.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "serve/chat_prompt.hpp"
#include "tokenizer/utf8.hpp"

namespace tessera::serve {

namespace {

// Status messages live until the next call on the same thread (the ABI's promise).
ts_status status(int32_t code, std::string message) {
  thread_local std::string buffer;
  buffer = std::move(message);
  return ts_status{code, buffer.c_str()};
}
ts_status ok() { return ts_status{TS_OK, nullptr}; }

template <class F>
ts_status guarded(F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return ts_status{TS_ERR_OUT_OF_MEMORY, "out of memory"};
  } catch (const std::exception& e) {
    try {
      return status(TS_ERR_INTERNAL, e.what());
    } catch (...) {
      return ts_status{TS_ERR_INTERNAL, "internal error"};
    }
  } catch (...) {
    return ts_status{TS_ERR_INTERNAL, "internal error"};
  }
}

int32_t code_of(engine::RequestError::Kind kind) {
  switch (kind) {
    case engine::RequestError::Kind::kTooLong:
      return TS_ERR_CONTEXT_LENGTH;
    case engine::RequestError::Kind::kBusy:
      return TS_ERR_BUSY;
    case engine::RequestError::Kind::kUnavailable:
      return TS_ERR_UNAVAILABLE;
    default:
      return TS_ERR_INVALID_ARGUMENT;
  }
}

// The ABI's buffer convention: the full size always, at most `capacity` elements written.
template <class T>
ts_status copy_out(const T* data, std::size_t size, T* out, int64_t capacity, int64_t* n) {
  if (n == nullptr) return ts_status{TS_ERR_INVALID_ARGUMENT, "size pointer is NULL"};
  *n = static_cast<int64_t>(size);
  if (capacity > 0 && out == nullptr) return ts_status{TS_ERR_INVALID_ARGUMENT, "buffer is NULL"};
  const std::size_t count =
      std::min<std::size_t>(size, static_cast<std::size_t>(std::max<int64_t>(capacity, 0)));
  if (count > 0) std::memcpy(out, data, count * sizeof(T));
  return ok();
}

}  // namespace

ServingApi::ServingApi(ServingInfo info, std::shared_ptr<const tokenizer::Tokenizer> tokenizer)
    : info_(std::move(info)), tokenizer_(std::move(tokenizer)), metrics_(info_.limits.max_context) {
  table_.struct_size = sizeof(ts_engine_api);
  table_.ctx = this;
  table_.submit = &ServingApi::submit;
  table_.abort = &ServingApi::abort;
  table_.model_info_json = &ServingApi::model_info_json;
  table_.metrics_text = &ServingApi::metrics_text;
  table_.health = &ServingApi::health;
  table_.tokenize = &ServingApi::tokenize;
  table_.detokenize = &ServingApi::detokenize;
  table_.apply_chat_template = &ServingApi::apply_chat_template;
}

ServingApi::~ServingApi() = default;

void ServingApi::attach(EngineHooks hooks) {
  {
    const std::lock_guard lock(mutex_);
    hooks_ = std::make_shared<const EngineHooks>(std::move(hooks));
  }
  health_.store(1);
}

void ServingApi::set_draining() { health_.store(2); }

std::size_t ServingApi::in_flight() const {
  const std::lock_guard lock(mutex_);
  return live_.size();
}

bool ServingApi::wait_idle(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (in_flight() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void ServingApi::forget(uint64_t id) {
  const std::lock_guard lock(mutex_);
  live_.erase(id);
}

ts_status ServingApi::submit_impl(const char* request_json, ts_event_callback on_event, void* user,
                                  uint64_t* request_id) {
  if (request_json == nullptr || request_id == nullptr) {
    return ts_status{TS_ERR_INVALID_ARGUMENT, "submit: request_json and request_id are required"};
  }
  std::shared_ptr<const EngineHooks> hooks;
  {
    const std::lock_guard lock(mutex_);
    hooks = hooks_;
  }
  if (health_.load() != 1 || !hooks) {
    metrics_.request_refused();
    return status(TS_ERR_UNAVAILABLE, health_.load() == 2 ? "the server is shutting down"
                                                          : "the model is still loading");
  }
  ServeRequest request;
  try {
    request = parse_serve_request(request_json, *tokenizer_, info_.limits);
  } catch (const InvalidRequest& e) {
    metrics_.request_refused();
    return status(e.kind() == InvalidRequest::Kind::kTooLong ? TS_ERR_CONTEXT_LENGTH
                                                             : TS_ERR_INVALID_ARGUMENT,
                  e.what());
  }
  const uint64_t id = next_id_.fetch_add(1);
  auto stream = std::make_shared<RequestStream>(request, on_event, user, *tokenizer_, metrics_,
                                                info_.limits.default_max_tokens);
  {
    const std::lock_guard lock(mutex_);
    live_[id] = stream;
  }
  for (int64_t i = 0; i < request.n; ++i) {
    engine::Request choice = request.base;
    if (choice.sampling.seed && i > 0) *choice.sampling.seed += static_cast<uint64_t>(i);
    const auto index = static_cast<std::size_t>(i);
    auto callback = [this, stream, index, id](const engine::Event& event) {
      stream->on_engine_event(index, event);
      if (stream->done()) forget(id);
    };
    int32_t refusal = TS_OK;
    std::string why;
    try {
      const uint64_t engine_id = hooks->submit(std::move(choice), std::move(callback));
      stream->set_engine_id(index, engine_id);
      metrics_.request_started();
    } catch (const engine::RequestError& e) {
      refusal = code_of(e.kind());
      why = e.what();
    } catch (const std::exception& e) {
      refusal = TS_ERR_INTERNAL;
      why = e.what();
    }
    if (refusal != TS_OK) {
      // Earlier choices are queued: silence them and take them back. Their final events still
      // arrive (and are swallowed) before the stream is forgotten.
      stream->abandon_from(index);
      for (const uint64_t queued : stream->engine_ids()) hooks->abort(queued);
      if (stream->done()) forget(id);
      metrics_.request_refused();
      return status(refusal, why);
    }
  }
  *request_id = id;
  return ok();
}

ts_status ServingApi::submit(void* ctx, const char* request_json, ts_event_callback on_event,
                             void* user, uint64_t* request_id) {
  return guarded([&] {
    return static_cast<ServingApi*>(ctx)->submit_impl(request_json, on_event, user, request_id);
  });
}

ts_status ServingApi::abort(void* ctx, uint64_t request_id) {
  return guarded([&] {
    auto* self = static_cast<ServingApi*>(ctx);
    std::shared_ptr<RequestStream> stream;
    std::shared_ptr<const EngineHooks> hooks;
    {
      const std::lock_guard lock(self->mutex_);
      const auto it = self->live_.find(request_id);
      if (it != self->live_.end()) stream = it->second;
      hooks = self->hooks_;
    }
    if (stream && hooks) {
      for (const uint64_t engine_id : stream->engine_ids()) hooks->abort(engine_id);
    }
    return ok();  // unknown or finished ids: nothing to do
  });
}

const char* ServingApi::model_info_json(void* ctx) {
  thread_local std::string buffer;
  try {
    const auto* self = static_cast<ServingApi*>(ctx);
    const auto& l = self->info_.limits;
    nlohmann::json info = {
        {"id", self->info_.model_name},
        {"max_context", l.max_context},
        {"vocab_size", self->tokenizer_->vocab_size()},
        {"limits",
         {{"max_tokens", l.max_tokens},
          {"max_n", l.max_n},
          {"max_logprobs", l.max_logprobs},
          {"max_body_bytes", self->info_.max_body_bytes},
          {"max_queue", self->info_.max_queue}}},
        {"default_max_tokens", l.default_max_tokens},
        {"reasoning_efforts", l.effort_profile == chat::ReasoningEffortProfile::kOfficial
                                  ? nlohmann::json{"low", "high", "max"}
                                  : nlohmann::json{"high", "max"}},
    };
    buffer = info.dump();
  } catch (...) {
    buffer = "{}";
  }
  return buffer.c_str();
}

const char* ServingApi::metrics_text(void* ctx) {
  thread_local std::string buffer;
  try {
    auto* self = static_cast<ServingApi*>(ctx);
    std::shared_ptr<const EngineHooks> hooks;
    {
      const std::lock_guard lock(self->mutex_);
      hooks = self->hooks_;
    }
    const EngineSnapshot snapshot = hooks && hooks->snapshot ? hooks->snapshot() : EngineSnapshot{};
    buffer = self->metrics_.exposition(self->info_.model_name, snapshot);
  } catch (...) {
    buffer.clear();
  }
  return buffer.c_str();
}

int32_t ServingApi::health(void* ctx) { return static_cast<ServingApi*>(ctx)->health_.load(); }

ts_status ServingApi::tokenize(void* ctx, const char* text, int32_t* ids, int64_t capacity,
                               int64_t* n_ids) {
  return guarded([&] {
    if (text == nullptr) return ts_status{TS_ERR_INVALID_ARGUMENT, "tokenize: text is NULL"};
    if (!tokenizer::is_valid_utf8(text)) {
      return ts_status{TS_ERR_INVALID_ARGUMENT, "tokenize: text is not valid UTF-8"};
    }
    const auto tokens = static_cast<ServingApi*>(ctx)->tokenizer_->encode(text);
    return copy_out(tokens.data(), tokens.size(), ids, capacity, n_ids);
  });
}

ts_status ServingApi::detokenize(void* ctx, const int32_t* ids, int64_t n, char* text,
                                 int64_t capacity, int64_t* n_bytes) {
  return guarded([&] {
    if (n < 0 || (n > 0 && ids == nullptr)) {
      return ts_status{TS_ERR_INVALID_ARGUMENT, "detokenize: bad ids"};
    }
    const auto& tok = *static_cast<ServingApi*>(ctx)->tokenizer_;
    for (int64_t i = 0; i < n; ++i) {
      if (ids[i] < 0 || ids[i] >= tok.vocab_size()) {
        return status(TS_ERR_INVALID_ARGUMENT,
                      fmt::format("detokenize: token id {} is outside the vocabulary [0, {})",
                                  ids[i], tok.vocab_size()));
      }
    }
    const std::string out = tok.decode(std::span<const int32_t>(ids, static_cast<std::size_t>(n)));
    return copy_out(out.data(), out.size(), text, capacity, n_bytes);
  });
}

ts_status ServingApi::apply_chat_template(void* ctx, const char* request_json, char* text,
                                          int64_t capacity, int64_t* n_bytes) {
  return guarded([&] {
    const auto* self = static_cast<ServingApi*>(ctx);
    const auto request =
        chat::Json::parse(request_json != nullptr ? request_json : "", nullptr, false);
    if (!request.is_object()) {
      return ts_status{TS_ERR_INVALID_ARGUMENT, "apply_chat_template: expected a JSON object"};
    }
    ChatPrompt prompt;
    try {
      prompt = render_chat_prompt(request, self->info_.limits.effort_profile);
    } catch (const chat::ChatEncodingError& e) {
      return status(TS_ERR_INVALID_ARGUMENT, e.what());
    }
    return copy_out(prompt.text.data(), prompt.text.size(), text, capacity, n_bytes);
  });
}

}  // namespace tessera::serve
