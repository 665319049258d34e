#include "engine/output_stage.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include "ops/compute_threads.hpp"

namespace tessera::engine {

void OutputStage::start() {
  wait();
  if (!has_pending()) {
    return;
  }
  pending_ ^= 1;
  started_ = true;
  starter_ = std::this_thread::get_id();
  done_.store(false, std::memory_order_relaxed);
  Batch& batch = batches_[pending_ ^ 1];
  const size_t n = batch.tokens.size();
  chunks_.clear();
  for (size_t begin = 0; begin < n || chunks_.empty(); begin += kChunk) {
    chunks_.push_back({this, &batch, begin, std::min(n, begin + kChunk), false});
  }
  chunks_.back().last = true;
  for (Chunk& c : chunks_) {
    ops::run_on_helper({&OutputStage::run_chunk, &c});
  }
}

void OutputStage::run_chunk(void* chunk) {
  const Chunk& c = *static_cast<const Chunk*>(chunk);
  OutputStage& stage = *c.stage;
  Batch& batch = *c.batch;
  const auto t0 = std::chrono::steady_clock::now();
  stage.render_tokens(batch, c.begin, c.end, stage.deliveries_);
  if (c.last) {
    stage.finish_batch(batch, stage.deliveries_);
    if (stage.dispatcher_.queue(std::move(stage.deliveries_))) {
      stage.dispatcher_.wake();
    }
    stage.deliveries_.clear();
  }
  if (std::this_thread::get_id() != stage.starter_) {
    stage.results_.helper_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  if (c.last) {
    stage.done_.store(true, std::memory_order_release);
    stage.done_.notify_one();
  }
}

OutputStage::Results& OutputStage::wait() {
  if (started_) {
    done_.wait(false, std::memory_order_acquire);
    started_ = false;
  }
  return results_;
}

OutputStage::Results& OutputStage::run_here(Deliveries& out) {
  wait();
  Batch& batch = batches_[pending_];
  render_tokens(batch, 0, batch.tokens.size(), out);
  finish_batch(batch, out);
  return results_;
}

void OutputStage::render_tokens(Batch& batch, size_t begin, size_t end, Deliveries& out) {
  // Each sequence's text state is asked for a few sequences before its turn (token_output.hpp).
  constexpr size_t kAhead = 4;
  const size_t n = end;
  for (size_t i = begin; i < std::min(n, begin + kAhead); ++i) {
    prefetch_render_state(*batch.tokens[i].seq);
  }
  for (size_t i = begin; i < n; ++i) {
    if (i + kAhead < n) {
      prefetch_render_state(*batch.tokens[i + kAhead].seq);
    }
    DecidedToken& d = batch.tokens[i];
    Sequence& s = *d.seq;
    TokenOutcome o;
    try {
      o = render_token(d);
    } catch (const std::exception& e) {  // a tokenizer bug: this request ends, the others go on
      spdlog::error("engine: rendering a token of request {}: {}", s.id, e.what());
      o = TokenOutcome{};
      o.event.request_id = s.id;
      o.event.error = std::string("rendering the output failed: ") + e.what();
      o.event.finish = FinishReason::kError;
      o.event.usage = d.usage;
      o.event.usage.repetition_hits = s.repetition_hits;
    }
    if (o.repetition_hit) {
      ++results_.repetition_hits;
    }
    if (o.event.finish && !d.final()) {  // the loop still runs it: it retires it and delivers this
      results_.late.push_back({&s, std::move(o.event), true});
      continue;
    }
    out.push_back({s.on_event, std::move(o.event)});
  }
}

void OutputStage::finish_batch(Batch& batch, Deliveries& out) {
  for (Finished& f : batch.finished) {
    if (!f.rendered) {
      f.event.usage.repetition_hits = f.seq->repetition_hits;
    }
    out.push_back({f.seq->on_event, std::move(f.event)});
  }
  batch.tokens.clear();
  batch.finished.clear();
}

}  // namespace tessera::engine
