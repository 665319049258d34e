#include "serve/request_stream.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "tokenizer/utf8.hpp"

namespace tessera::serve {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// JSON has no -inf: vLLM reports such logprobs as -9999.0.
double finite_logprob(float lp) { return std::isfinite(lp) ? lp : -9999.0; }

// A token's text for logprobs: its bytes as (lossy) UTF-8, and the raw bytes as integers.
void token_fields(const tokenizer::Tokenizer& tokenizer, int32_t id, Json& out) {
  const std::string_view bytes = tokenizer.token_bytes(id);
  Json list = Json::array();
  for (const unsigned char c : bytes) {
    list.push_back(static_cast<int>(c));
  }
  out["token"] = tokenizer::utf8_lossy(bytes);
  out["bytes"] = std::move(list);
}

Finish finish_kind(engine::FinishReason r) {
  switch (r) {
    case engine::FinishReason::kStop:
      return Finish::kStop;
    case engine::FinishReason::kLength:
      return Finish::kLength;
    case engine::FinishReason::kAbort:
      return Finish::kAbort;
    case engine::FinishReason::kRepetition:
      return Finish::kRepetition;
    default:
      return Finish::kError;
  }
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

RequestStream::RequestStream(const ServeRequest& request, ts_event_callback on_event, void* user,
                             const tokenizer::Tokenizer& tokenizer, ServeMetrics& metrics,
                             int64_t default_max_tokens, StreamArm arm)
    : tokenizer_(tokenizer),
      metrics_(metrics),
      arm_(std::move(arm)),
      arm_field_(arm_.name.empty() ? std::string() : "\"arm\":" + dump(arm_.name) + ","),
      on_event_(on_event),
      user_(user),
      chat_(request.chat),
      include_stop_str_(request.include_stop_str_in_output),
      stop_token_ids_(request.base.stop_token_ids),
      prompt_tokens_(static_cast<int64_t>(request.base.prompt.size())),
      max_tokens_(request.base.max_tokens.value_or(default_max_tokens)),
      choices_(static_cast<std::size_t>(request.n)),
      submitted_(Clock::now()) {
  if (chat_) {
    const auto think_end = tokenizer.token_to_id(chat::kThinkEnd);
    for (auto& c : choices_) {
      c.splitter.emplace(request.thinking, think_end);
    }
  }
}

void RequestStream::set_engine_id(std::size_t index, uint64_t engine_id) {
  const std::lock_guard lock(mutex_);
  choices_.at(index).engine_id = engine_id;
}

std::vector<uint64_t> RequestStream::engine_ids() const {
  const std::lock_guard lock(mutex_);
  std::vector<uint64_t> ids;
  for (const auto& c : choices_) {
    if (c.engine_id && !c.finished) {
      ids.push_back(*c.engine_id);
    }
  }
  return ids;
}

void RequestStream::abandon_from(std::size_t first) {
  const std::lock_guard lock(mutex_);
  muted_ = true;
  for (std::size_t i = first; i < choices_.size(); ++i) {
    if (!choices_[i].finished) {
      choices_[i].finished = true;
      ++finished_;
    }
  }
  if (finished_ == choices_.size()) {
    done_ = true;
  }
}

bool RequestStream::done() const {
  const std::lock_guard lock(mutex_);
  return done_;
}

void RequestStream::emit(const std::string& json) {
  if (muted_ || on_event_ == nullptr) {
    return;
  }
  if (arm_field_.empty()) {
    return on_event_(user_, json.c_str());
  }
  const std::string with_arm = "{" + arm_field_ + json.substr(1);  // every event is an object
  on_event_(user_, with_arm.c_str());
}

void RequestStream::record_outcome(const Choice& c, const engine::Event& event,
                                   Clock::time_point now) {
  if (arm_.comparison == nullptr) {
    return;
  }
  ab::LiveOutcome o;
  o.finish_reason = engine::finish_reason_name(*event.finish);
  o.repetition_stop = *event.finish == engine::FinishReason::kRepetition;
  o.repetition_hit = event.usage.repetition_hits > 0;
  o.latency_s = std::chrono::duration<double>(now - submitted_).count();
  o.ttft_s = c.first_token ? std::chrono::duration<double>(*c.first_token - submitted_).count()
                           : o.latency_s;
  o.prompt_tokens = prompt_tokens_;
  o.output_tokens = event.usage.completion_tokens;
  arm_.comparison->record(arm_.index, o);
}

std::string RequestStream::logprobs_json(const engine::Event& event) const {
  Json entries = Json::array();
  for (const auto& lp : event.logprobs) {
    Json e = Json::object();
    token_fields(tokenizer_, lp.token, e);
    e["logprob"] = finite_logprob(lp.logprob);
    Json top = Json::array();
    for (const auto& [id, value] : lp.top) {
      Json t = Json::object();
      token_fields(tokenizer_, id, t);
      t["logprob"] = finite_logprob(value);
      top.push_back(std::move(t));
    }
    e["top_logprobs"] = std::move(top);
    entries.push_back(std::move(e));
  }
  return dump(entries);
}

void RequestStream::on_engine_event(std::size_t index, const engine::Event& event) {
  const std::lock_guard lock(mutex_);
  if (done_ || index >= choices_.size()) {
    return;
  }
  Choice& c = choices_[index];
  if (c.finished) {
    return;
  }
  const auto now = Clock::now();
  if (!event.tokens.empty()) {
    const double since =
        std::chrono::duration<double>(now - (c.last_token ? *c.last_token : submitted_)).count();
    if (!c.last_token) {
      c.first_token = now;
      metrics_.first_token(since);
    } else {
      // Several tokens in one event (a stop string held text back): spread the gap evenly.
      for (std::size_t i = 0; i < event.tokens.size(); ++i) {
        metrics_.inter_token(since / static_cast<double>(event.tokens.size()));
      }
    }
    c.last_token = now;
    c.tokens += static_cast<int64_t>(event.tokens.size());
    metrics_.tokens_generated(static_cast<int64_t>(event.tokens.size()));
  }

  Json delta = {{"type", "delta"}, {"index", index}};
  bool has_output = false;
  std::string text = event.text;
  if (event.finish && include_stop_str_ && event.stop_string) {
    text += *event.stop_string;
  }
  if (chat_) {
    auto piece = c.splitter->push(text, event.tokens);
    if (event.finish) {
      auto tail = c.splitter->finish();
      piece.reasoning += tail.reasoning;
      piece.content += tail.content;
      for (auto& call : tail.tool_calls) {
        piece.tool_calls.push_back(std::move(call));
      }
    }
    if (!piece.reasoning.empty()) {
      delta["reasoning"] = piece.reasoning;
    }
    if (!piece.content.empty()) {
      delta["content"] = piece.content;
    }
    if (!piece.tool_calls.empty()) {
      Json calls = Json::array();
      for (const auto& call : piece.tool_calls) {
        calls.push_back({{"name", call.name}, {"arguments", call.arguments_json}});
      }
      delta["tool_calls"] = std::move(calls);
    }
    has_output = !piece.reasoning.empty() || !piece.content.empty() || !piece.tool_calls.empty();
  } else if (!text.empty()) {
    delta["text"] = text;
    has_output = true;
  }
  if (!event.tokens.empty()) {
    delta["token_ids"] = event.tokens;
  }
  if (!event.logprobs.empty()) {
    delta["logprobs"] = Json::parse(logprobs_json(event));
    has_output = true;
  }
  if (has_output || !event.tokens.empty()) {
    emit(dump(delta));
  }

  if (!event.finish) {
    return;
  }
  c.finished = true;
  ++finished_;
  if (*event.finish == engine::FinishReason::kError) {
    emit(dump({{"type", "error"},
               {"status", 500},
               {"message", event.error.empty() ? "the engine failed this request" : event.error}}));
  }
  Json stop_reason = nullptr;
  if (event.stop_string) {
    stop_reason = *event.stop_string;
  } else if (event.stop_token && std::find(stop_token_ids_.begin(), stop_token_ids_.end(),
                                           *event.stop_token) != stop_token_ids_.end()) {
    stop_reason = *event.stop_token;
  }
  emit(dump({{"type", "finish"},
             {"index", index},
             {"finish_reason", engine::finish_reason_name(*event.finish)},
             {"stop_reason", stop_reason}}));
  completion_tokens_ += event.usage.completion_tokens;
  cached_tokens_ = std::max(cached_tokens_, event.usage.cached_tokens);
  if (c.splitter) {
    reasoning_tokens_ += c.splitter->reasoning_tokens();
    metrics_.reasoning_finished(c.splitter->reasoning_tokens());
  }
  record_outcome(c, event, now);
  metrics_.request_phases(
      event.usage.queue_seconds,
      c.first_token ? std::optional<double>(
                          std::chrono::duration<double>(*c.first_token - submitted_).count())
                    : std::nullopt,
      std::chrono::duration<double>(now - submitted_).count());
  metrics_.request_finished(finish_kind(*event.finish), prompt_tokens_,
                            event.usage.completion_tokens,
                            std::chrono::duration<double>(now - submitted_).count(), max_tokens_,
                            static_cast<int64_t>(choices_.size()));
  if (finished_ == choices_.size()) {
    done_ = true;
    emit(dump({{"type", "done"},
               {"usage",
                {{"prompt_tokens", prompt_tokens_},
                 {"completion_tokens", completion_tokens_},
                 {"reasoning_tokens", reasoning_tokens_},
                 {"cached_tokens", cached_tokens_}}}}));
  }
}

}  // namespace tessera::serve
