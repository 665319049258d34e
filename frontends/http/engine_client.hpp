// The engine as this frontend sees it: a C++ face on the ts_engine_api table (copied strings,
// vectors, statuses turned into ApiErrors with the right HTTP status). Calls are thread-safe as
// the table promises; returned engine strings are copied at once (they live only until the next
// call on the same thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api_error.hpp"
#include "tessera/plugin_abi.h"

namespace tessera::http {

enum class EngineHealth { kLoading = 0, kReady = 1, kDraining = 2 };

// What a failing engine call becomes for the client.
[[nodiscard]] ApiError error_from_status(ts_status status, const char* what);

class EngineClient {
 public:
  EngineClient() = default;
  explicit EngineClient(const ts_engine_api* api) : api_(api) {}

  [[nodiscard]] bool attached() const noexcept { return api_ != nullptr; }

  // Submits a request; events go to on_event(user, json) on engine threads. nullopt on success
  // (id in *request_id), the error otherwise.
  [[nodiscard]] std::optional<ApiError> submit(const std::string& request_json,
                                               ts_event_callback on_event, void* user,
                                               std::uint64_t* request_id) const;
  void abort(std::uint64_t request_id) const noexcept;

  [[nodiscard]] std::string model_info_json() const;
  [[nodiscard]] std::string metrics_text() const;
  [[nodiscard]] EngineHealth health() const noexcept;

  // Throw RequestError (request_fields.hpp) on engine refusal.
  [[nodiscard]] std::vector<std::int32_t> tokenize(const std::string& text) const;
  [[nodiscard]] std::string detokenize(const std::vector<std::int32_t>& ids) const;
  [[nodiscard]] bool has_chat_template() const noexcept;
  [[nodiscard]] std::string apply_chat_template(const std::string& request_json) const;
  // The live A/B report JSON; nullopt when the engine runs no [ab] (or predates the slot).
  [[nodiscard]] std::optional<std::string> ab_report_json() const;

 private:
  const ts_engine_api* api_ = nullptr;
};

}  // namespace tessera::http
