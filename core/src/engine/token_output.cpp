#include "engine/token_output.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "engine/batch_sampler.hpp"

namespace tessera::engine {

namespace {

bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// Reasoning budget: close the thinking block ourselves when it has used its budget, or when only
// min_answer_tokens of max_tokens are left for the answer.
int32_t after_reasoning_budget(Sequence& s, int32_t token, const TokenRules& rules) {
  if (!s.in_reasoning || rules.think_end < 0) {
    return token;
  }
  const bool over_budget =
      s.max_reasoning_tokens > 0 && s.reasoning_tokens >= s.max_reasoning_tokens;
  const bool answer_squeezed =
      rules.min_answer_tokens > 0 && s.max_tokens - s.n_output() <= rules.min_answer_tokens;
  if (over_budget || answer_squeezed) {
    token = rules.think_end;
  }
  if (token == rules.think_end) {
    s.in_reasoning = false;
  } else {
    ++s.reasoning_tokens;
  }
  return token;
}

}  // namespace

Usage usage_of(const Sequence& s) {
  Usage u;
  u.prompt_tokens = s.n_prompt;
  u.completion_tokens = s.n_output();
  u.cached_tokens = s.cached_tokens;
  u.reasoning_tokens = s.reasoning_tokens;
  if (s.first_scheduled) {
    u.queue_seconds = std::chrono::duration<double>(*s.first_scheduled - s.submitted).count();
  }
  return u;
}

void prefetch_decide_state(const Sequence& s, int level) {
  if (level == 1) {
    __builtin_prefetch(&s.id);
    __builtin_prefetch(&s.request.ignore_eos);
    __builtin_prefetch(&s.request.stop_token_ids);
    __builtin_prefetch(&s.tokens);
    __builtin_prefetch(&s.max_reasoning_tokens);
    return;
  }
  __builtin_prefetch(s.tokens.data() + s.tokens.size(), 1);
}

void prefetch_render_state(const Sequence& s) {
  __builtin_prefetch(s.detokenizer.get());
  __builtin_prefetch(&s.stops);
  __builtin_prefetch(s.on_event.get());
  if (s.guard && !s.guard->tokens().empty()) {
    const std::vector<int32_t>& g = s.guard->tokens();
    __builtin_prefetch(g.data() + g.size() - 1, 1);
    if (g.size() > 16) {  // the 32-token look-back
      __builtin_prefetch(g.data() + g.size() - 17);
    }
    if (g.size() > 32) {
      __builtin_prefetch(g.data() + g.size() - 33);
    }
  }
}

DecidedToken decide_token(Sequence& s, SampledToken& t, const TokenRules& rules) {
  DecidedToken d;
  d.seq = &s;
  d.token = after_reasoning_budget(s, t.token, rules);
  d.logprob = t.logprob;
  d.top = std::move(t.top);
  s.tokens.push_back(d.token);
  d.stop_token = (!s.request.ignore_eos && contains(*rules.eos, d.token)) ||
                 contains(s.request.stop_token_ids, d.token);
  d.length = s.n_output() >= s.max_tokens || static_cast<int64_t>(s.tokens.size()) >= s.max_total;
  d.usage = usage_of(s);
  return d;
}

TokenOutcome render_token(DecidedToken& d) {
  Sequence& s = *d.seq;
  TokenOutcome o;
  Event& ev = o.event;
  ev.request_id = s.id;
  ev.tokens.push_back(d.token);
  if (s.params.logprobs != 0) {
    ev.logprobs.push_back({d.token, d.logprob, std::move(d.top)});
  }

  // The order of the checks is the order of precedence: a stop id, a stop string, the repetition
  // guard, the length limits.
  std::optional<FinishReason>& reason = ev.finish;
  if (d.stop_token) {
    reason = FinishReason::kStop;
    ev.stop_token = d.token;
  } else {
    const std::string piece = s.detokenizer ? s.detokenizer->push(d.token) : std::string();
    StopMatcher::Result r = s.stops.push(piece);
    ev.text = std::move(r.text);
    if (r.matched) {
      reason = FinishReason::kStop;
      ev.stop_string = s.request.stop[*r.matched];
    }
  }
  if (!reason && s.guard && s.guard->push(d.token)) {
    ++s.repetition_hits;
    o.repetition_hit = true;
    if (s.stop_on_repetition) {
      reason = FinishReason::kRepetition;
    }
  }
  if (!reason && d.length) {
    reason = FinishReason::kLength;
  }
  if (reason && !ev.stop_string) {  // the end of the text: incomplete UTF-8, held-back text
    StopMatcher::Result r = s.stops.push(s.detokenizer ? s.detokenizer->finish() : std::string());
    ev.text += r.text;
    if (r.matched) {
      reason = FinishReason::kStop;
      ev.stop_string = s.request.stop[*r.matched];
      ev.stop_token.reset();
    } else {
      ev.text += s.stops.flush();
    }
  }
  if (reason) {
    ev.usage = d.usage;
    ev.usage.repetition_hits = s.repetition_hits;
  }
  return o;
}

}  // namespace tessera::engine
