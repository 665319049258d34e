#include "engine_client.hpp"

#include <cstddef>

#include "request_fields.hpp"

namespace tessera::http {

ApiError error_from_status(ts_status status, const char* what) {
  ApiError e;
  e.message = status.message != nullptr ? status.message : std::string(what) + " failed";
  switch (status.code) {
    case TS_ERR_INVALID_ARGUMENT:
    case TS_ERR_UNSUPPORTED:
    case TS_ERR_NUMERIC:
      e.status = 400;
      break;
    case TS_ERR_CONTEXT_LENGTH:
      e.status = 400;
      e.code = "context_length_exceeded";
      e.param = "messages";
      break;
    case TS_ERR_BUSY:
      e.status = 429;
      e.retry_after_s = 1;
      break;
    case TS_ERR_UNAVAILABLE:
      e.status = 503;
      e.retry_after_s = 5;
      break;
    default:
      e.status = 500;
  }
  return e;
}

std::optional<ApiError> EngineClient::submit(const std::string& request_json,
                                             ts_event_callback on_event, void* user,
                                             std::uint64_t* request_id) const {
  const ts_status s = api_->submit(api_->ctx, request_json.c_str(), on_event, user, request_id);
  if (s.code == TS_OK) {
    return std::nullopt;
  }
  return error_from_status(s, "submit");
}

void EngineClient::abort(std::uint64_t request_id) const noexcept {
  (void)api_->abort(api_->ctx, request_id);
}

std::string EngineClient::model_info_json() const {
  const char* text = api_->model_info_json(api_->ctx);
  return text != nullptr ? std::string(text) : std::string("{}");
}

std::string EngineClient::metrics_text() const {
  const char* text = api_->metrics_text(api_->ctx);
  return text != nullptr ? std::string(text) : std::string();
}

EngineHealth EngineClient::health() const noexcept {
  const int32_t h = api_->health(api_->ctx);
  return h == 1 ? EngineHealth::kReady : h == 2 ? EngineHealth::kDraining : EngineHealth::kLoading;
}

namespace {

// Runs a fill(capacity, buffer, &needed) call with the ABI's buffer convention: start with a
// guess, grow once to the size the engine reported.
template <class T, class Fill>
std::vector<T> call_with_buffer(std::size_t guess, Fill&& fill, const char* what) {
  std::vector<T> buffer(guess);
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::int64_t needed = 0;
    const ts_status s = fill(buffer.data(), static_cast<std::int64_t>(buffer.size()), &needed);
    if (s.code != TS_OK) {
      throw RequestError(error_from_status(s, what));
    }
    if (needed < 0) {
      break;
    }
    if (static_cast<std::size_t>(needed) <= buffer.size()) {
      buffer.resize(static_cast<std::size_t>(needed));
      return buffer;
    }
    buffer.resize(static_cast<std::size_t>(needed));
  }
  ApiError e;
  e.status = 500;
  e.message = std::string(what) + ": the engine reported inconsistent sizes";
  throw RequestError(std::move(e));
}

}  // namespace

std::vector<std::int32_t> EngineClient::tokenize(const std::string& text) const {
  return call_with_buffer<std::int32_t>(
      text.size() / 2 + 16,
      [&](std::int32_t* ids, std::int64_t capacity, std::int64_t* n) {
        return api_->tokenize(api_->ctx, text.c_str(), ids, capacity, n);
      },
      "tokenize");
}

std::string EngineClient::detokenize(const std::vector<std::int32_t>& ids) const {
  const auto bytes = call_with_buffer<char>(
      ids.size() * 8 + 16,
      [&](char* text, std::int64_t capacity, std::int64_t* n) {
        return api_->detokenize(api_->ctx, ids.data(), static_cast<std::int64_t>(ids.size()), text,
                                capacity, n);
      },
      "detokenize");
  return std::string(bytes.begin(), bytes.end());
}

bool EngineClient::has_chat_template() const noexcept {
  return api_ != nullptr &&
         api_->struct_size >= offsetof(ts_engine_api, apply_chat_template) + sizeof(void*) &&
         api_->apply_chat_template != nullptr;
}

std::string EngineClient::apply_chat_template(const std::string& request_json) const {
  if (!has_chat_template()) {
    ApiError e;
    e.status = 501;
    e.message = "this engine does not expose its chat template";
    throw RequestError(std::move(e));
  }
  const auto bytes = call_with_buffer<char>(
      request_json.size() * 2 + 256,
      [&](char* text, std::int64_t capacity, std::int64_t* n) {
        return api_->apply_chat_template(api_->ctx, request_json.c_str(), text, capacity, n);
      },
      "apply_chat_template");
  return std::string(bytes.begin(), bytes.end());
}

std::optional<std::string> EngineClient::ab_report_json() const {
  if (api_ == nullptr ||
      api_->struct_size < offsetof(ts_engine_api, ab_report_json) + sizeof(void*) ||
      api_->ab_report_json == nullptr) {
    return std::nullopt;
  }
  const char* text = api_->ab_report_json(api_->ctx);
  if (text == nullptr) {
    return std::nullopt;
  }
  return std::string(text);
}

}  // namespace tessera::http
