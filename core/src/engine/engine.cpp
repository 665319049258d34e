#include "engine/engine.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

#include "ops/compute_threads.hpp"
#include "util/check.hpp"
#include "util/process_clock.hpp"

namespace tessera::engine {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Pages one sequence of `total` tokens needs at the least (one-token steps): its window, its
// compressed entries and one copy-on-write page per stream.
PageDemand minimum_pages(const dsv4::ModelConfig& c, int64_t page, int64_t total) {
  PageDemand d;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const int64_t m = c.compress_ratio(l);
    d.main += ceil_div(c.window, page) + 1;
    if (m > 0) d.main += ceil_div(total / m, page) + 1;
    if (m == 4) d.indexer += ceil_div(total / m, page) + 1;
  }
  return d;
}

uint64_t fresh_seed() {
  static std::mutex mutex;
  static std::mt19937_64 generator{std::random_device{}()};
  std::lock_guard lock(mutex);
  return generator();
}

}  // namespace

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kError:
      return "error";
    case FinishReason::kRepetition:
      return "repetition";
  }
  return "error";
}

Engine::Engine(Runtime& runtime, const EngineOptions& options,
               const tokenizer::Tokenizer* tokenizer)
    : runtime_(runtime), options_(options), tokenizer_(tokenizer) {
  const dsv4::ModelConfig& config = runtime.model_config();
  TS_CHECK(options_.max_running_sequences >= 1 && options_.max_batched_tokens >= 1,
           "engine: max_running_sequences ({}) and max_batched_tokens ({}) must be positive",
           options_.max_running_sequences, options_.max_batched_tokens);
  const int64_t ring_slots = runtime.pools().rings.slots();
  TS_CHECK(runtime.device() == nullptr || options_.max_running_sequences <= ring_slots,
           "engine: max_running_sequences = {}, but the device holds compressor state for {} "
           "sequences (the runtime's scheduler.max_running_sequences)",
           options_.max_running_sequences, ring_slots);
  max_context_ = options_.max_context > 0            ? options_.max_context
                 : runtime.options().max_context > 0 ? runtime.options().max_context
                                                     : config.max_position_embeddings;
  eos_.assign(config.eos_token_ids.begin(), config.eos_token_ids.end());
  if (eos_.empty()) eos_.push_back(static_cast<int32_t>(config.eos_token_id));
  if (tokenizer_ != nullptr) {
    think_begin_ = tokenizer_->token_to_id("<think>").value_or(-1);
    think_end_ = tokenizer_->token_to_id("</think>").value_or(-1);
  }

  executor_ = std::make_unique<Executor>(runtime, options_.tensor_parallel, options_.threads,
                                         options_.reduction_parts);
  const int64_t page = runtime.pools().main.entries_per_page();
  prefix_block_ = page;
  for (int64_t m : config.compress_ratios)
    if (m > 0) prefix_block_ = std::lcm(prefix_block_, m);
  if (options_.prefix_cache) prefix_ = std::make_unique<PrefixCache>(prefix_block_);
  scheduler_ = std::make_unique<Scheduler>(options_, *executor_, prefix_.get());
  sampler_ = std::make_unique<BatchSampler>(runtime.sampler());
  loop_stats_.main_pages_total = runtime.pools().main.total_pages();
  loop_stats_.indexer_pages_total = runtime.pools().indexer.total_pages();
  publish_stats();
  dispatcher_ = std::make_unique<EventDispatcher>();
  output_ = std::make_unique<OutputStage>(*dispatcher_);
  loop_thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  loop_thread_.join();
  output_.reset();
  dispatcher_.reset();  // delivers the last events
}

void Engine::validate(const Request& r) const {
  using K = RequestError::Kind;
  const dsv4::ModelConfig& c = runtime_.model_config();
  auto invalid = [](const std::string& m) { throw RequestError(K::kInvalid, m); };
  if (r.prompt.empty()) invalid("the prompt is empty");
  for (int32_t t : r.prompt)
    if (t < 0 || t >= c.vocab_size)
      invalid(fmt::format("prompt token id {} is outside the vocabulary [0, {})", t, c.vocab_size));
  for (int32_t t : r.stop_token_ids)
    if (t < 0 || t >= c.vocab_size)
      invalid(fmt::format("stop token id {} is outside the vocabulary [0, {})", t, c.vocab_size));
  if (!r.stop.empty() && tokenizer_ == nullptr)
    invalid("stop strings need a tokenizer, and this engine has none");
  for (const std::string& s : r.stop)
    if (s.empty()) invalid("a stop string is empty");
  if (r.max_tokens && (*r.max_tokens < 1 || *r.max_tokens > options_.max_tokens_limit))
    invalid(fmt::format("max_tokens = {} is outside [1, {}] (limits.max_tokens)", *r.max_tokens,
                        options_.max_tokens_limit));
  if (r.top_logprobs < 0 || r.top_logprobs > options_.max_logprobs)
    invalid(fmt::format("top_logprobs = {} is outside [0, {}] (limits.max_logprobs)",
                        r.top_logprobs, options_.max_logprobs));
  const SamplingOptions& s = r.sampling;
  if (s.temperature && !(*s.temperature >= 0)) invalid("temperature must be >= 0");
  if (s.top_p && !(*s.top_p > 0 && *s.top_p <= 1)) invalid("top_p must be in (0, 1]");
  if (s.top_k && *s.top_k < 0) invalid("top_k must be >= 0 (0: off)");
  if (s.min_p && !(*s.min_p >= 0 && *s.min_p <= 1)) invalid("min_p must be in [0, 1]");
  if (s.repetition_penalty && !(*s.repetition_penalty > 0))
    invalid("repetition_penalty must be > 0");
  const auto prompt = static_cast<int64_t>(r.prompt.size());
  if (prompt >= max_context_)
    throw RequestError(K::kTooLong,
                       fmt::format("the prompt has {} tokens; the context limit is {} (prompt + "
                                   "output), which leaves no room for output",
                                   prompt, max_context_));
  const int64_t total =
      std::min(max_context_, prompt + r.max_tokens.value_or(options_.defaults.max_tokens));
  const KvPools& pools = runtime_.pools();
  const PageDemand need = minimum_pages(c, pools.main.entries_per_page(), total);
  if (need.main > pools.main.total_pages() || need.indexer > pools.indexer.total_pages())
    throw RequestError(
        K::kTooLong,
        fmt::format("{} tokens need at least {} + {} cache pages; the cache has {} + {} "
                    "(raise kv_cache.memory_gib or ask for fewer tokens)",
                    total, need.main, need.indexer, pools.main.total_pages(),
                    pools.indexer.total_pages()));
}

uint64_t Engine::submit(Request request, EventCallback on_event) {
  validate(request);
  auto seq = std::make_unique<Sequence>();
  seq->params = resolve_sampling(request, options_.defaults, fresh_seed());
  seq->max_tokens = request.max_tokens.value_or(options_.defaults.max_tokens);
  seq->max_total = max_context_;
  seq->tokens = request.prompt;
  seq->n_prompt = static_cast<int64_t>(request.prompt.size());
  seq->on_event = std::make_shared<const EventCallback>(std::move(on_event));
  if (tokenizer_ != nullptr)
    seq->detokenizer = std::make_unique<tokenizer::IncrementalDetokenizer>(
        *tokenizer_, request.skip_special_tokens);
  seq->stops = StopMatcher(request.stop);
  const std::string guard_mode = request.repetition_guard.value_or(options_.repetition_mode);
  if (tokenizer_ != nullptr && guard_mode != "off") {
    const tokenizer::Tokenizer* tok = tokenizer_;
    seq->guard.emplace(options_.repetition, [tok](int32_t id) { return tok->token_bytes(id); });
    seq->stop_on_repetition = guard_mode == "stop";
  }
  // Thinking mode: the chat prompt ends with <think>; reasoning runs until </think>.
  if (think_begin_ >= 0 && !request.prompt.empty() && request.prompt.back() == think_begin_) {
    seq->in_reasoning = true;
    seq->max_reasoning_tokens =
        request.max_reasoning_tokens.value_or(options_.max_reasoning_tokens);
  }
  seq->submitted = Clock::now();
  seq->request = std::move(request);
  uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || failed_)
      throw RequestError(RequestError::Kind::kUnavailable,
                         failed_ ? "the engine failed (a tensor-parallel rank died); restart it"
                                 : "the engine is shutting down");
    check_admission(seq->request.queue_fan_out);
    id = next_id_++;
    seq->id = id;
    seq->arrival = id;
    ++in_flight_;
    inbox_.push_back(std::move(seq));
  }
  wake_.notify_one();
  return id;
}

// What really waits is what is in flight beyond the running slots: a count kept under the lock
// at every submit and finish, not the running count the loop publishes once per step (which
// made a burst on an idle server look like a full queue). A request's own sequences all count as
// waiting, so a group larger than max_queue can never be admitted: that is the client's error,
// not a reason to retry.
void Engine::check_admission(int64_t fan_out) const {
  if (fan_out <= 0) return;  // a sibling of a group admitted whole
  if (fan_out > options_.max_queue) {
    throw RequestError(
        RequestError::Kind::kInvalid,
        fmt::format("the request needs {} sequences (n x prompts) but limits.max_queue is {}: it "
                    "can never be admitted; lower n or send fewer prompts per request",
                    fan_out, options_.max_queue));
  }
  const int64_t waiting = std::max<int64_t>(0, in_flight_ - options_.max_running_sequences);
  if (waiting + fan_out > options_.max_queue) {
    throw RequestError(RequestError::Kind::kBusy,
                       fmt::format("{} sequences are waiting for a slot and this request adds {} "
                                   "(limits.max_queue = {}); retry later",
                                   waiting, fan_out, options_.max_queue));
  }
}

void Engine::abort(uint64_t request_id) {
  {
    std::lock_guard lock(mutex_);
    aborts_.push_back(request_id);
  }
  wake_.notify_one();
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mutex_);
  EngineStats s = stats_;
  s.in_flight = in_flight_;
  return s;
}

void Engine::wait_idle() const {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return in_flight_ == 0; });
}

void Engine::loop() {
  for (;;) {
    std::vector<std::unique_ptr<Sequence>> incoming;
    std::vector<uint64_t> aborts;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] {
        return stopping_ || !inbox_.empty() || !aborts_.empty() || output_->has_pending() ||
               (!failed_ && scheduler_->running() + scheduler_->waiting() > 0);
      });
      if (stopping_) break;
      incoming.swap(inbox_);
      aborts.swap(aborts_);
    }
    // Host time covers the whole iteration but the forward: admissions and aborts count as
    // scheduling, publishing the stats and posting the events as output (they land in the stats
    // published by the next iteration).
    const auto t_awake = Clock::now();
    // What the last iteration decided (published already) renders while this one schedules and
    // runs its forward; what this one decides waits for the next.
    output_->start();
    const auto t_started = Clock::now();
    for (auto& seq : incoming) {
      Sequence* s = seq.get();
      sequences_.emplace(s->id, std::move(seq));
      scheduler_->add(s);
    }
    for (uint64_t id : aborts) {
      const auto it = sequences_.find(id);
      if (it == sequences_.end() || it->second->state == SequenceState::kFinished) continue;
      Event ev;
      ev.request_id = id;
      finish(*it->second, FinishReason::kAbort, std::move(ev));
    }
    const double starting = seconds(t_started - t_awake);
    const double admitting = seconds(Clock::now() - t_started);
    loop_stats_.output_seconds += starting;
    loop_stats_.schedule_seconds += admitting;
    loop_stats_.host_seconds += starting + admitting;
    bool forwarded = false;
    if (!failed_ && scheduler_->running() + scheduler_->waiting() > 0) {
      try {
        forwarded = run_step();
      } catch (const std::exception& e) {  // a bug, not a request's fault: fail what is in flight
        spdlog::error("engine: step failed: {}", e.what());
        fail_all(std::string("engine step failed: ") + e.what());
      }
    }
    // No forward to hide it behind: this iteration's events (its aborts, late finishes) are
    // rendered here, and posted after the stats.
    const auto t_publish = Clock::now();
    Deliveries out;
    if (!forwarded) {
      absorb(output_->wait());
      if (output_->has_pending()) {
        absorb(output_->run_here(out));
      }
    }
    // Stats first: a client that sees an event also sees the state that produced it.
    publish_stats();
    if (dispatcher_->queue(std::move(out))) {
      // Waking the dispatcher thread costs this thread 10-40 us on a small VM (it preempts us); a
      // compute helper spinning through our serial part does it instead.
      ops::run_on_helper(
          {[](void* d) { static_cast<EventDispatcher*>(d)->wake(); }, dispatcher_.get()});
    }
    const double publishing = seconds(Clock::now() - t_publish);
    loop_stats_.output_seconds += publishing;
    loop_stats_.host_seconds += publishing;
  }
  fail_all("");  // shutdown: everything in flight ends with "abort"
  Deliveries out;
  while (output_->has_pending()) {
    absorb(output_->run_here(out));
  }
  publish_stats();
  dispatcher_->post(std::move(out));
}

void Engine::fail_all(const std::string& error) {
  absorb(output_->wait());  // a step that threw may have left a batch rendering
  std::vector<std::unique_ptr<Sequence>> queued;
  {
    std::lock_guard lock(mutex_);
    queued.swap(inbox_);
  }
  for (auto& seq : queued) {
    Sequence* s = seq.get();
    sequences_.emplace(s->id, std::move(seq));
  }
  for (auto& [id, seq] : sequences_) {
    if (seq->state == SequenceState::kFinished) continue;
    Event ev;
    ev.request_id = id;
    ev.error = error;
    finish(*seq, error.empty() ? FinishReason::kAbort : FinishReason::kError, std::move(ev));
  }
}

void Engine::retire(Sequence& s) {
  if (s.state != SequenceState::kFinished) {
    try {
      scheduler_->remove(&s);
    } catch (const std::exception& e) {  // freeing must not stop the others' events
      spdlog::error("engine: freeing request {}: {}", s.id, e.what());
    }
  }
  s.state = SequenceState::kFinished;
  finished_.push_back(s.id);  // leaves in_flight when the stats are published
  ++loop_stats_.finished;
}

void Engine::finish(Sequence& s, FinishReason reason, Event event) {
  retire(s);
  event.finish = reason;
  event.usage = usage_of(s);
  output_->pending().finished.push_back({&s, std::move(event), false});
}

void Engine::absorb(OutputStage::Results& results) {
  loop_stats_.repetition_hits += results.repetition_hits;
  loop_stats_.deferred_output_seconds += results.helper_seconds;
  for (OutputStage::Finished& f : results.late) {
    // Ended by the loop meanwhile (an abort, an error): that final event stands.
    if (f.seq->state == SequenceState::kFinished) {
      continue;
    }
    retire(*f.seq);
    output_->pending().finished.push_back(std::move(f));
  }
  results = {};
}

bool Engine::run_step() {
  const auto t0 = Clock::now();
  ScheduledStep& step = step_;
  scheduler_->schedule(step);
  for (Sequence* s : step.failed) {
    Event ev;
    ev.request_id = s->id;
    ev.error = fmt::format(
        "the request does not fit in the kv cache even alone ({} + {} pages); raise "
        "kv_cache.memory_gib",
        runtime_.pools().main.total_pages(), runtime_.pools().indexer.total_pages());
    finish(*s, FinishReason::kError, std::move(ev));
  }
  if (step.chunks.empty()) {
    return false;
  }
  for (size_t i = 0; i < step.sequences.size(); ++i) {
    Sequence* s = step.sequences[i];
    if (!s->first_scheduled) s->first_scheduled = t0;  // vLLM's queue time ends here
    // A row the sampler needs only the scan of (greedy), or that is not sampled (a prompt chunk
    // before the last): a device forward leaves its values on the device.
    const auto chunk = static_cast<int64_t>(step.chunks[i].tokens.size());
    step.chunks[i].scan_only = sampler_->scan_only(s->params, s->pending_tokens() == chunk);
  }
  const auto t1 = Clock::now();
  dsv4::Logits logits;
  try {
    logits = executor_->step(step.chunks);
  } catch (const std::exception& e) {
    spdlog::error("engine: forward failed: {}", e.what());
    absorb(output_->wait());
    scheduler_->abandon(step);
    for (Sequence* s : step.sequences) {
      if (s->state == SequenceState::kFinished) {  // its text ended it
        continue;
      }
      Event ev;
      ev.request_id = s->id;
      ev.error = std::string("forward failed: ") + e.what();
      finish(*s, FinishReason::kError, std::move(ev));
    }
    if (executor_->failed()) {
      {
        std::lock_guard lock(mutex_);
        failed_ = true;
      }
      fail_all("the tensor-parallel executor failed");
    }
    return true;
  }
  const auto t2 = Clock::now();
  scheduler_->complete(step);
  absorb(output_->wait());  // late finishes: their rows of this step are not sampled

  ready_.clear();
  ready_rows_.clear();
  int64_t batched = 0;
  for (size_t i = 0; i < step.sequences.size(); ++i) {
    batched += static_cast<int64_t>(step.chunks[i].tokens.size());
    Sequence* s = step.sequences[i];
    if (s->state == SequenceState::kFinished || s->pending_tokens() != 0) {
      continue;
    }
    ready_.push_back(s);
    ready_rows_.push_back(logits.chunk_rows[i]);
  }
  auto t_sampled = Clock::now();
  if (!ready_.empty()) {
    const std::span<SampledToken> tokens = sampler_->sample(ready_, logits, ready_rows_);
    t_sampled = Clock::now();
    if (!first_token_logged_) {  // start-up as a user sees it: loading and the first request
      first_token_logged_ = true;
      spdlog::info("engine: first token {:.2f} s after the process started",
                   seconds_since_process_start());
    }
    decide_tokens(tokens);
  }
  const auto t3 = Clock::now();
  loop_stats_.schedule_seconds += seconds(t1 - t0);
  loop_stats_.sample_seconds += seconds(t_sampled - t2);
  loop_stats_.output_seconds += seconds(t3 - t_sampled);
  ++loop_stats_.steps;
  loop_stats_.batched_tokens += batched;
  loop_stats_.forward_seconds += seconds(t2 - t1);
  loop_stats_.host_seconds += seconds(t1 - t0) + seconds(t3 - t2);
  return true;
}

void Engine::decide_tokens(std::span<SampledToken> tokens) {
  const TokenRules rules{&eos_, think_end_, options_.min_answer_tokens};
  std::vector<DecidedToken>& decided = output_->pending().tokens;
  decided.reserve(ready_.size());
  // Each sequence's state is asked for kAhead sequences before its turn, its token tail half that
  // (token_output.hpp).
  constexpr size_t kAhead = 8;
  const size_t n = ready_.size();
  for (size_t i = 0; i < std::min(n, kAhead); ++i) {
    prefetch_decide_state(*ready_[i], 1);
  }
  for (size_t i = 0; i < std::min(n, kAhead / 2); ++i) {
    prefetch_decide_state(*ready_[i], 2);
  }
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) {
      prefetch_decide_state(*ready_[i + kAhead], 1);
    }
    if (i + kAhead / 2 < n) {
      prefetch_decide_state(*ready_[i + kAhead / 2], 2);
    }
    Sequence& s = *ready_[i];
    if (tokens[i].token < 0) {
      Event ev;
      ev.request_id = s.id;
      ev.error =
          sampler_->last_error().empty() ? "the sampler returned no token" : sampler_->last_error();
      finish(s, FinishReason::kError, std::move(ev));
      continue;
    }
    decided.push_back(decide_token(s, tokens[i], rules));
    ++loop_stats_.generated_tokens;
    if (decided.back().final()) {
      retire(s);
    }
  }
}

void Engine::publish_stats() {
  const KvPools& pools = executor_->leader().pools();
  loop_stats_.running = static_cast<int64_t>(scheduler_->running());
  loop_stats_.waiting = static_cast<int64_t>(scheduler_->waiting());
  loop_stats_.main_pages_free = pools.main.free_pages();
  loop_stats_.main_pages_cached =
      prefix_ ? executor_->leader().main_pages_held_by_snapshots_only() : 0;
  loop_stats_.indexer_pages_free = pools.indexer.free_pages();
  loop_stats_.prefix_nodes = prefix_ ? static_cast<int64_t>(prefix_->ready_nodes()) : 0;
  const SchedulerCounters& c = scheduler_->counters();
  loop_stats_.preemptions = c.preemptions;
  loop_stats_.prefill_tokens = c.prefill_tokens;
  loop_stats_.prefix_hit_tokens = c.prefix_hit_tokens;
  loop_stats_.prefix_evictions = c.prefix_evictions;
  std::lock_guard lock(mutex_);
  loop_stats_.failed = failed_;
  stats_ = loop_stats_;
  in_flight_ -= static_cast<int64_t>(finished_.size());
  for (uint64_t id : erasable_) {
    sequences_.erase(id);
  }
  erasable_.swap(finished_);
  finished_.clear();
  if (in_flight_ == 0) idle_.notify_all();
}

}  // namespace tessera::engine
