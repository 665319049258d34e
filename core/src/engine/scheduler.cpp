#include "engine/scheduler.hpp"

#include <algorithm>

#include "util/check.hpp"

namespace tessera::engine {

Scheduler::Scheduler(const EngineOptions& options, Executor& executor, PrefixCache* prefix_cache)
    : options_(options), executor_(executor), prefix_(prefix_cache) {}

void Scheduler::add(Sequence* seq) {
  seq->state = SequenceState::kWaiting;
  waiting_.insert(seq);
}

void Scheduler::remove(Sequence* seq) {
  waiting_.erase(seq);
  std::erase(running_, seq);
  free_kv(seq);
  seq->state = SequenceState::kFinished;
}

void Scheduler::free_kv(Sequence* seq) {
  if (seq->kv != nullptr) executor_.apply({CacheOpKind::kFree, seq->id, 0});
  seq->kv = nullptr;
  seq->kv_length = 0;
  seq->cursor_node = 0;
  seq->cursor_length = 0;
  seq->cursor_valid = true;
}

void Scheduler::preempt(Sequence* seq) {
  free_kv(seq);
  std::erase(running_, seq);
  ++seq->preemptions;
  ++counters_.preemptions;
  add(seq);
}

bool Scheduler::evict_prefix() {
  if (prefix_ == nullptr) return false;
  const uint64_t id = prefix_->evict_one();
  if (id == 0) return false;
  executor_.apply({CacheOpKind::kDropSnapshot, 0, id});
  ++counters_.prefix_evictions;
  return true;
}

Sequence* Scheduler::preemption_victim() const {
  Sequence* victim = nullptr;
  for (Sequence* s : running_) {
    if (victim == nullptr || s->request.priority > victim->request.priority ||
        (s->request.priority == victim->request.priority && s->arrival > victim->arrival))
      victim = s;
  }
  return victim;
}

void Scheduler::Plan::add(const Candidate& c) {
  items.push_back(c);
  tokens += c.tokens;
  pages.main += c.demand.main;
  pages.indexer += c.demand.indexer;
}

void Scheduler::Plan::drop(const Sequence* seq) {
  std::erase_if(items, [&](const Candidate& c) {
    if (c.seq != seq) return false;
    tokens -= c.tokens;
    pages.main -= c.demand.main;
    pages.indexer -= c.demand.indexer;
    return true;
  });
}

int64_t Scheduler::fit(Sequence* seq, int64_t n, Plan& planned, bool may_preempt) {
  const KvPools& pools = executor_.leader().pools();
  for (;;) {
    const PageDemand need = seq->kv->pages_needed(n);
    PageDemand total = planned.pages;
    total.main += need.main;
    total.indexer += need.indexer;
    if (total.fits(pools)) {
      planned.add({seq, n, need});
      return n;
    }
    if (evict_prefix()) continue;
    if (n > 1) {  // a smaller prefill chunk before hurting another sequence
      n = (n + 1) / 2;
      continue;
    }
    if (!may_preempt) return 0;
    Sequence* victim = preemption_victim();
    if (victim == nullptr) return 0;
    planned.drop(victim);
    preempt(victim);
    if (victim == seq) return 0;
  }
}

void Scheduler::admit(Sequence* seq) {
  PrefixCache::Match match;
  if (prefix_ != nullptr)
    match = prefix_->lookup(seq->request.cache_salt, seq->tokens,
                            static_cast<int64_t>(seq->tokens.size()) - 1);
  if (match.node != 0) {
    executor_.apply({CacheOpKind::kRestore, seq->id, match.node});
  } else {
    executor_.apply({CacheOpKind::kCreate, seq->id, 0});
  }
  seq->kv = &executor_.leader().sequence(seq->id);
  seq->kv_length = match.length;
  seq->cursor_node = match.node;
  seq->cursor_length = match.length;
  seq->cursor_valid = true;
}

void Scheduler::snapshot_points(Sequence* seq, int64_t n, std::vector<SnapshotPoint>& points) {
  points.clear();
  if (prefix_ == nullptr || !seq->cursor_valid) {
    return;
  }
  const int64_t B = prefix_->block_tokens();
  const std::span<const int32_t> tokens(seq->tokens);
  for (int64_t L = (seq->kv_length / B + 1) * B; L <= seq->kv_length + n; L += B) {
    if (seq->cursor_length != L - B ||
        (seq->cursor_node != 0 && !prefix_->alive(seq->cursor_node))) {
      seq->cursor_valid = false;  // the chain was cut (evicted): no more snapshots this admission
      break;
    }
    const auto block = tokens.subspan(static_cast<size_t>(L - B), static_cast<size_t>(B));
    uint64_t node = prefix_->find_child(seq->cursor_node, seq->request.cache_salt, block);
    if (node != 0) {
      prefix_->touch(node);
    } else {
      node = prefix_->add_pending(seq->cursor_node, seq->request.cache_salt, block);
      if (node == 0) {
        seq->cursor_valid = false;
        break;
      }
      points.push_back({L, node});
      ++counters_.prefix_snapshots;
    }
    seq->cursor_node = node;
    seq->cursor_length = L;
  }
}

void Scheduler::schedule(ScheduledStep& out) {
  out.sequences.clear();
  out.failed.clear();
  Plan& planned = plan_;
  planned.items.clear();
  planned.tokens = 0;
  planned.pages = {};
  const int64_t chunk_cap =
      options_.chunked_prefill_size > 0
          ? std::min(options_.chunked_prefill_size, options_.max_batched_tokens)
          : options_.max_batched_tokens;
  auto budget = [&] { return options_.max_batched_tokens - planned.tokens; };
  // 1. decodes, 2. prefills in progress (admission order within each).
  for (int pass = 0; pass < 2; ++pass) {
    pass_.assign(running_.begin(), running_.end());  // fit() may preempt out of running_
    for (Sequence* seq : pass_) {
      if (seq->state != SequenceState::kRunning) continue;  // preempted in this step
      const bool decode = seq->pending_tokens() == 1;
      if ((pass == 0) != decode) continue;
      const int64_t n =
          std::min({seq->pending_tokens(), budget(), decode ? int64_t{1} : chunk_cap});
      if (n <= 0) continue;
      fit(seq, n, planned, /*may_preempt=*/true);
    }
  }
  // 3. admissions.
  while (!waiting_.empty() &&
         static_cast<int64_t>(running_.size()) < options_.max_running_sequences && budget() > 0) {
    Sequence* seq = *waiting_.begin();
    admit(seq);
    const int64_t n = std::min({seq->pending_tokens(), budget(), chunk_cap});
    if (fit(seq, n, planned, /*may_preempt=*/false) == 0) {
      free_kv(seq);
      if (planned.items.empty() && running_.empty()) {  // an empty cache cannot hold it
        waiting_.erase(seq);
        out.failed.push_back(seq);
        continue;
      }
      break;
    }
    waiting_.erase(seq);
    running_.push_back(seq);
    seq->state = SequenceState::kRunning;
    counters_.prefix_hit_tokens += seq->kv_length;
    if (!seq->admitted_once) seq->cached_tokens = std::min(seq->kv_length, seq->n_prompt);
    seq->admitted_once = true;
  }

  out.chunks.resize(planned.items.size());  // the chunks kept keep their buffers
  for (size_t i = 0; i < planned.items.size(); ++i) {
    const Candidate& c = planned.items[i];
    Sequence* seq = c.seq;
    PlannedChunk& chunk = out.chunks[i];
    chunk.sequence = seq->id;
    chunk.tokens.assign(seq->tokens.begin() + seq->kv_length,
                        seq->tokens.begin() + seq->kv_length + c.tokens);
    snapshot_points(seq, c.tokens, chunk.snapshots);
    // Every token but a freshly sampled last one is prefill (prompt, or recomputation).
    const bool ends_with_sampled =
        seq->kv_length + c.tokens == static_cast<int64_t>(seq->tokens.size()) &&
        seq->n_output() > 0;
    counters_.prefill_tokens += c.tokens - (ends_with_sampled ? 1 : 0);
    out.sequences.push_back(seq);
  }
}

void Scheduler::complete(const ScheduledStep& step) {
  for (size_t i = 0; i < step.chunks.size(); ++i) {
    Sequence* seq = step.sequences[i];
    seq->kv_length += static_cast<int64_t>(step.chunks[i].tokens.size());
    for (const SnapshotPoint& p : step.chunks[i].snapshots) prefix_->mark_ready(p.snapshot);
  }
}

void Scheduler::abandon(const ScheduledStep& step) {
  if (prefix_ == nullptr) return;
  for (auto c = step.chunks.rbegin(); c != step.chunks.rend(); ++c)
    for (auto p = c->snapshots.rbegin(); p != c->snapshots.rend(); ++p)
      prefix_->discard_pending(p->snapshot);
}

}  // namespace tessera::engine
