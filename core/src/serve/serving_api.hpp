// The ts_engine_api table handed to every frontend plugin (docs/http.md, "The engine table as
// frontends see it"). It is the host side of serving: request JSON in (text, token ids or chat
// messages), events JSON out (text, or reasoning / content / tool calls), n choices fanned out to
// n engine requests, the context-length check in vLLM's words, the tokenizer and the chat
// template, model info with the [limits], Prometheus text, health.
//
// The table exists before the model is loaded: health() says "loading" and submit refuses with
// TS_ERR_UNAVAILABLE until attach(). set_draining() makes health() "draining" and refuses new
// submissions; requests already running continue.
//
// Live A/B (docs/ab.md): with two or more arms in ServingInfo, attach() takes one engine per arm.
// submit assigns each request to an arm — the request's "arm" (the X-Tessera-Arm header), else a
// hash of its "user" field, else of its "request_id" (X-Request-Id), else of a random key — so a
// user stays on one arm; the arm's name goes out in every event ("arm"), /metrics labels every
// series with it, and ab_report_json returns the running comparison.
//
// Thread-safety: every table function may be called from any thread at any time after
// construction. attach/set_draining from the serve thread. Destroy only after every frontend has
// stopped and the engine has stopped calling back.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "comparison/arm_assignment.hpp"
#include "comparison/live_comparison.hpp"
#include "engine/request.hpp"
#include "serve/request_stream.hpp"
#include "serve/serve_metrics.hpp"
#include "serve/serve_request.hpp"
#include "tessera/plugin_abi.h"
#include "tokenizer/tokenizer.hpp"

namespace tessera::serve {

// What serving needs from a running engine.
struct EngineHooks {
  // Queues a request; throws engine::RequestError when refused. Every queued request ends with
  // exactly one event whose `finish` is set, also after abort.
  std::function<uint64_t(engine::Request, engine::EventCallback)> submit;
  std::function<void(uint64_t)> abort;
  std::function<EngineSnapshot()> snapshot;
};

struct ServingInfo {
  std::string model_name;  // what clients send as "model"
  ServeLimits limits;
  int64_t max_body_bytes = 8 << 20;
  int64_t max_queue = 1024;
  std::vector<ab::ArmWeight> ab_arms;  // [ab]: two or more arms, or none
  std::size_t ab_report_window = 4096;
};

class ServingApi {
 public:
  ServingApi(ServingInfo info, std::shared_ptr<const tokenizer::Tokenizer> tokenizer);
  ~ServingApi();
  ServingApi(const ServingApi&) = delete;
  ServingApi& operator=(const ServingApi&) = delete;

  [[nodiscard]] const ts_engine_api* table() const { return &table_; }

  void attach(EngineHooks hooks);  // the engine is up: health "ready"
  // With [ab]: one engine per arm, in the order of ServingInfo::ab_arms.
  void attach(std::vector<EngineHooks> arms);
  void set_draining();  // health "draining"; submit refuses
  // True once no request is in flight (every one delivered "done"), false at the timeout.
  [[nodiscard]] bool wait_idle(std::chrono::milliseconds timeout) const;
  [[nodiscard]] std::size_t in_flight() const;

  [[nodiscard]] const ServingInfo& info() const { return info_; }
  [[nodiscard]] bool ab_enabled() const { return assignment_.has_value(); }

 private:
  // The C entry points; ctx is this.
  static ts_status submit(void* ctx, const char* request_json, ts_event_callback on_event,
                          void* user, uint64_t* request_id);
  static ts_status abort(void* ctx, uint64_t request_id);
  static const char* model_info_json(void* ctx);
  static const char* metrics_text(void* ctx);
  static int32_t health(void* ctx);
  static ts_status tokenize(void* ctx, const char* text, int32_t* ids, int64_t capacity,
                            int64_t* n_ids);
  static ts_status detokenize(void* ctx, const int32_t* ids, int64_t n, char* text,
                              int64_t capacity, int64_t* n_bytes);
  static ts_status apply_chat_template(void* ctx, const char* request_json, char* text,
                                       int64_t capacity, int64_t* n_bytes);
  static const char* ab_report_json(void* ctx);

  ts_status submit_impl(const char* request_json, ts_event_callback on_event, void* user,
                        uint64_t* request_id);
  // The arm serving a request (0 without A/B); throws InvalidRequest for an unknown arm name.
  std::size_t choose_arm(const chat::Json& request);
  void forget(uint64_t id);
  [[nodiscard]] std::shared_ptr<const std::vector<EngineHooks>> hooks() const;

  struct Live {
    std::shared_ptr<RequestStream> stream;
    std::size_t arm = 0;
  };

  ServingInfo info_;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  std::optional<ab::ArmAssignment> assignment_;         // with [ab]
  std::unique_ptr<ab::LiveComparison> comparison_;      // with [ab]
  std::vector<std::unique_ptr<ServeMetrics>> metrics_;  // one per arm (one without A/B)
  ts_engine_api table_{};
  std::atomic<int32_t> health_{0};
  std::shared_ptr<const std::vector<EngineHooks>> hooks_;  // one per arm; set once by attach
  mutable std::mutex mutex_;                               // guards live_ and hooks_
  std::unordered_map<uint64_t, Live> live_;
  std::atomic<uint64_t> next_id_{1};
};

}  // namespace tessera::serve
