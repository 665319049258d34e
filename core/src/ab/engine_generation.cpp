#include "ab/engine_generation.hpp"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>

#include "generation/repetition_guard.hpp"
#include "util/check.hpp"

namespace tessera::ab {

namespace {

using Clock = std::chrono::steady_clock;

engine::EngineOptions options_for(const Arm& arm) {
  engine::EngineOptions o = engine::EngineOptions::from_config(arm.config);
  o.prefix_cache = false;  // a later seed of the same prompt would skip its prefill
  o.defaults = arm.sampling;
  return o;
}

}  // namespace

EngineGeneration::EngineGeneration(Arm& arm)
    : arm_(arm),
      engine_(
          std::make_unique<engine::Engine>(*arm.runtime, options_for(arm), arm.tokenizer.get())) {}

EngineGeneration::~EngineGeneration() = default;

ArmRun EngineGeneration::run(const std::vector<int32_t>& prompt, uint64_t seed,
                             int64_t max_tokens) {
  engine::Request request;
  request.prompt = prompt;
  const SamplingDefaults& s = arm_.sampling;
  request.sampling.temperature = s.temperature;
  request.sampling.top_p = s.top_p > 0 ? s.top_p : 1.0;
  request.sampling.top_k = s.top_k;
  request.sampling.min_p = s.min_p;
  request.sampling.repetition_penalty = s.repetition_penalty > 0 ? s.repetition_penalty : 1.0;
  request.sampling.frequency_penalty = s.frequency_penalty;
  request.sampling.presence_penalty = s.presence_penalty;
  request.sampling.seed = seed;
  request.max_tokens = max_tokens;

  // Shared with the callback, which runs on the engine's dispatcher thread and may still be called
  // after this function returns (the "abort" finish event after a repetition stop).
  struct State {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    bool stopped_by_guard = false;
    ArmRun run;
    std::optional<Clock::time_point> first_token;
    Clock::time_point finished;
    std::optional<generation::RepetitionGuard> guard;
  };
  auto state = std::make_shared<State>();
  state->run.prompt_tokens = static_cast<int64_t>(prompt.size());
  state->guard.emplace(arm_.repetition,
                       [tok = arm_.tokenizer](int32_t token) { return tok->token_bytes(token); });
  const std::string mode = arm_.repetition_mode;

  const auto start = Clock::now();
  const uint64_t id = engine_->submit(std::move(request), [state, mode](const engine::Event& ev) {
    std::lock_guard<std::mutex> lock(state->mutex);
    if (state->done) return;
    ArmRun& run = state->run;
    if (!ev.tokens.empty() && !state->first_token) state->first_token = Clock::now();
    for (int32_t token : ev.tokens) {
      if (ev.stop_token && token == *ev.stop_token) break;  // generate() omits the stop id
      run.tokens.push_back(token);
      if (mode != "off" && state->guard->push(token)) {
        ++run.repetition_hits;
        if (mode == "stop") {
          state->stopped_by_guard = true;
          break;
        }
      }
    }
    if (!ev.finish && !state->stopped_by_guard) return;
    if (state->stopped_by_guard)
      run.finish_reason = "repetition";
    else if (*ev.finish == engine::FinishReason::kError)
      run.finish_reason = "error: " + ev.error;
    else
      run.finish_reason = engine::finish_reason_name(*ev.finish);
    state->finished = Clock::now();
    state->done = true;
    state->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(state->mutex);
  state->cv.wait(lock, [&] { return state->done; });
  const bool abort = state->stopped_by_guard;
  lock.unlock();
  if (abort) {
    engine_->abort(id);
    engine_->wait_idle();  // its pages are free before the next request
  }
  ArmRun run = std::move(state->run);
  const Clock::time_point finished = state->finished;
  const std::optional<Clock::time_point> first_token = state->first_token;
  TS_CHECK(run.finish_reason.rfind("error", 0) != 0, "A/B arm {}: engine request failed: {}",
           arm_.name, run.finish_reason);
  const Clock::time_point first = first_token.value_or(finished);
  run.ttft_s = std::chrono::duration<double>(first - start).count();
  run.decode_s = std::chrono::duration<double>(finished - first).count();
  run.text = arm_.tokenizer->decode(run.tokens, /*skip_special_tokens=*/true);
  return run;
}

}  // namespace tessera::ab
