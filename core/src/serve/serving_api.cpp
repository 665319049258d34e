#include "serve/serving_api.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "chat/chat_prompt.hpp"
#include "tessera/bounded_json.hpp"
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
  if (n == nullptr) {
    return ts_status{TS_ERR_INVALID_ARGUMENT, "size pointer is NULL"};
  }
  *n = static_cast<int64_t>(size);
  if (capacity > 0 && out == nullptr) {
    return ts_status{TS_ERR_INVALID_ARGUMENT, "buffer is NULL"};
  }
  const std::size_t count =
      std::min<std::size_t>(size, static_cast<std::size_t>(std::max<int64_t>(capacity, 0)));
  if (count > 0) {
    std::memcpy(out, data, count * sizeof(T));
  }
  return ok();
}

}  // namespace

ServingApi::ServingApi(ServingInfo info, std::shared_ptr<const tokenizer::Tokenizer> tokenizer)
    : info_(std::move(info)), tokenizer_(std::move(tokenizer)) {
  if (!info_.ab_arms.empty()) {
    assignment_.emplace(info_.ab_arms);  // throws for one arm, a bad name or bad weights
    std::vector<std::string> names;
    for (const auto& arm : info_.ab_arms) {
      names.push_back(arm.name);
    }
    comparison_ = std::make_unique<ab::LiveComparison>(names, info_.ab_report_window);
  }
  for (std::size_t i = 0; i < std::max<std::size_t>(info_.ab_arms.size(), 1); ++i) {
    metrics_.push_back(std::make_unique<ServeMetrics>(info_.limits.max_context));
  }
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
  table_.ab_report_json = &ServingApi::ab_report_json;
}

ServingApi::~ServingApi() = default;

void ServingApi::attach(EngineHooks hooks) {
  std::vector<EngineHooks> one;
  one.push_back(std::move(hooks));
  attach(std::move(one));
}

void ServingApi::attach(std::vector<EngineHooks> arms) {
  TS_CHECK(arms.size() == metrics_.size(), "ServingApi::attach: {} engines for {} arms",
           arms.size(), metrics_.size());
  {
    const std::lock_guard lock(mutex_);
    hooks_ = std::make_shared<const std::vector<EngineHooks>>(std::move(arms));
  }
  health_.store(1);
}

std::shared_ptr<const std::vector<EngineHooks>> ServingApi::hooks() const {
  const std::lock_guard lock(mutex_);
  return hooks_;
}

std::size_t ServingApi::choose_arm(const chat::Json& request) {
  if (!assignment_) {
    return 0;
  }
  const auto field = [&](const char* name) {
    if (!request.is_object() || !request.contains(name)) {
      return std::string();
    }
    if (!request[name].is_string()) {
      throw InvalidRequest(InvalidRequest::Kind::kInvalid,
                           fmt::format("'{}' must be a string", name));
    }
    return request[name].get<std::string>();
  };
  const std::string explicit_arm = field("arm");
  std::string key = field("user");
  if (key.empty()) {
    key = field("request_id");
  }
  if (key.empty()) {
    thread_local std::mt19937_64 random{std::random_device{}()};
    key = fmt::format("random-{:016x}", random());
  }
  if (!explicit_arm.empty() && assignment_->find(explicit_arm) == assignment_->arms().size()) {
    std::vector<std::string> names;
    for (const auto& arm : assignment_->arms()) {
      names.push_back(arm.name);
    }
    throw InvalidRequest(InvalidRequest::Kind::kInvalid,
                         fmt::format("unknown A/B arm \"{}\" (X-Tessera-Arm); the arms are: {}",
                                     explicit_arm, fmt::join(names, ", ")));
  }
  return assignment_->assign(key, explicit_arm);
}

void ServingApi::set_draining() { health_.store(2); }

std::size_t ServingApi::in_flight() const {
  const std::lock_guard lock(mutex_);
  return live_.size();
}

bool ServingApi::wait_idle(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (in_flight() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
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
  const auto all_hooks = hooks();
  // Parsed once, in linear time and within bounds (frontends hand over what clients sent): the
  // arm is chosen from it, then the request is read from it.
  sdk::BoundedJsonResult bounded = sdk::parse_bounded_json(request_json);
  if (!bounded.ok()) {
    metrics_[0]->request_refused();
    return status(TS_ERR_INVALID_ARGUMENT, "the request is refused: " + bounded.message());
  }
  const chat::Json parsed = std::move(bounded.value);
  // The arm first, so that even a refusal is counted in its arm's metrics.
  std::size_t arm = 0;
  try {
    arm = choose_arm(parsed);
  } catch (const InvalidRequest& e) {
    metrics_[0]->request_refused();
    return status(TS_ERR_INVALID_ARGUMENT, e.what());
  }
  ServeMetrics& metrics = *metrics_[arm];
  if (health_.load() != 1 || !all_hooks) {
    metrics.request_refused();
    return status(TS_ERR_UNAVAILABLE, health_.load() == 2 ? "the server is shutting down"
                                                          : "the model is still loading");
  }
  const EngineHooks* hooks = &(*all_hooks)[arm];
  ServeRequest request;
  try {
    request = serve_request_from_json(parsed, *tokenizer_, info_.limits);
  } catch (const InvalidRequest& e) {
    metrics.request_refused();
    return status(e.kind() == InvalidRequest::Kind::kTooLong ? TS_ERR_CONTEXT_LENGTH
                                                             : TS_ERR_INVALID_ARGUMENT,
                  e.what());
  }
  const uint64_t id = next_id_.fetch_add(1);
  StreamArm stream_arm;
  if (assignment_) {
    stream_arm = StreamArm{info_.ab_arms[arm].name, comparison_.get(), arm};
  }
  auto stream =
      std::make_shared<RequestStream>(request, on_event, user, *tokenizer_, metrics,
                                      info_.limits.default_max_tokens, std::move(stream_arm));
  {
    const std::lock_guard lock(mutex_);
    live_[id] = Live{stream, arm};
  }
  for (int64_t i = 0; i < request.n; ++i) {
    engine::Request choice = request.base;
    choice.queue_fan_out = i == 0 ? request.n : 0;  // the first choice is admitted for all
    if (choice.sampling.seed && i > 0) {
      *choice.sampling.seed += static_cast<uint64_t>(i);
    }
    const auto index = static_cast<std::size_t>(i);
    auto callback = [this, stream, index, id](const engine::Event& event) {
      stream->on_engine_event(index, event);
      if (stream->done()) {
        forget(id);
      }
    };
    int32_t refusal = TS_OK;
    std::string why;
    try {
      const uint64_t engine_id = hooks->submit(std::move(choice), std::move(callback));
      stream->set_engine_id(index, engine_id);
      metrics.request_started();
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
      for (const uint64_t queued : stream->engine_ids()) {
        hooks->abort(queued);
      }
      if (stream->done()) {
        forget(id);
      }
      metrics.request_refused();
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
    Live live;
    std::shared_ptr<const std::vector<EngineHooks>> hooks;
    {
      const std::lock_guard lock(self->mutex_);
      const auto it = self->live_.find(request_id);
      if (it != self->live_.end()) {
        live = it->second;
      }
      hooks = self->hooks_;
    }
    if (live.stream && hooks) {
      for (const uint64_t engine_id : live.stream->engine_ids()) {
        (*hooks)[live.arm].abort(engine_id);
      }
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
    if (self->assignment_) {
      nlohmann::json arms = nlohmann::json::array();
      for (const auto& arm : self->info_.ab_arms) {
        arms.push_back({{"name", arm.name}, {"weight", arm.weight}});
      }
      info["ab_arms"] = std::move(arms);
    }
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
    const auto hooks = self->hooks();
    std::vector<ArmMetrics> arms;
    for (std::size_t i = 0; i < self->metrics_.size(); ++i) {
      ArmMetrics a;
      if (self->assignment_) {
        a.arm = self->info_.ab_arms[i].name;
      }
      a.metrics = self->metrics_[i].get();
      if (hooks && (*hooks)[i].snapshot) {
        a.engine = (*hooks)[i].snapshot();
      }
      arms.push_back(std::move(a));
    }
    PrometheusWriter w;
    ServeMetrics::write_exposition(w, self->info_.model_name, arms);
    if (self->comparison_) {
      self->comparison_->write_prometheus(w, Labels{{"model_name", self->info_.model_name}});
    }
    buffer = w.take();
  } catch (...) {
    buffer.clear();
  }
  return buffer.c_str();
}

int32_t ServingApi::health(void* ctx) { return static_cast<ServingApi*>(ctx)->health_.load(); }

ts_status ServingApi::tokenize(void* ctx, const char* text, int32_t* ids, int64_t capacity,
                               int64_t* n_ids) {
  return guarded([&] {
    if (text == nullptr) {
      return ts_status{TS_ERR_INVALID_ARGUMENT, "tokenize: text is NULL"};
    }
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
    const sdk::BoundedJsonResult parsed =
        sdk::parse_bounded_json(request_json != nullptr ? request_json : "");
    if (!parsed.ok()) {
      return status(TS_ERR_INVALID_ARGUMENT, "apply_chat_template: " + parsed.message());
    }
    const chat::Json& request = parsed.value;
    if (!request.is_object()) {
      return ts_status{TS_ERR_INVALID_ARGUMENT, "apply_chat_template: expected a JSON object"};
    }
    chat::ChatPrompt prompt;
    try {
      prompt = chat::render_chat_prompt(request, self->info_.limits.effort_profile);
    } catch (const chat::ChatEncodingError& e) {
      return status(TS_ERR_INVALID_ARGUMENT, e.what());
    }
    return copy_out(prompt.text.data(), prompt.text.size(), text, capacity, n_bytes);
  });
}

const char* ServingApi::ab_report_json(void* ctx) {
  thread_local std::string buffer;
  const auto* self = static_cast<ServingApi*>(ctx);
  if (!self->comparison_) {
    return nullptr;
  }
  try {
    buffer = self->comparison_->report().dump();
  } catch (...) {
    buffer = "{}";
  }
  return buffer.c_str();
}

}  // namespace tessera::serve
