// What one sampled token does to its sequence, in two halves (docs/engine.md "Output one step
// behind"):
// - decide_token, on the engine loop right after sampling: the reasoning budget may replace the
//   token by </think>, it is appended, and EOS / stop ids and the length limits decide whether the
//   sequence ends here. That is all the next step's schedule needs.
// - render_token, on the output stage while the next forward runs: the token's text (incremental
//   detokenizer), stop strings (matched across tokens, never leaked), the repetition guard, and
//   the event. A stop string or a repetition stop ends the sequence one step late: the engine
//   then drops the row the next forward computed for it, so what a client receives is the same.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "engine/request.hpp"
#include "engine/sequence.hpp"

namespace tessera::engine {

struct SampledToken;

// The engine's fixed settings for turning tokens into events.
struct TokenRules {
  const std::vector<int32_t>* eos = nullptr;  // EOS ids (ignored with request.ignore_eos)
  int32_t think_end = -1;                     // </think> (-1: none)
  int64_t min_answer_tokens = 0;              // [generation]: room kept for the answer
};

// One token as the loop decided it, waiting for its text. Final when stop_token or length is set.
struct DecidedToken {
  Sequence* seq = nullptr;
  int32_t token = -1;  // after the reasoning budget
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;
  bool stop_token = false;  // EOS or a stop id: the sequence ends, the token has no text
  bool length = false;      // max_tokens or the context limit reached with this token
  Usage usage;              // as of this token (for the final event, should it be one)
  bool final() const { return stop_token || length; }
};

// The sequence's usage counters as of now (repetition_hits is the output stage's to fill in).
Usage usage_of(const Sequence& s);

// Loop thread. token.token must be >= 0 (a failed row is the caller's to report); token.top is
// moved from.
DecidedToken decide_token(Sequence& s, SampledToken& token, const TokenRules& rules);

struct TokenOutcome {
  Event event;                  // tokens, text, logprobs, stop fields; finish set: the last one
  bool repetition_hit = false;  // the guard saw a loop at this token
};

// Output stage. Touches only the sequence's text state (Sequence "text" members).
TokenOutcome render_token(DecidedToken& d);

// Hints only (nothing is read): decide_token's lines of a sequence (level 1: the Sequence, level
// 2: the token tail), and render_token's (the detokenizer, the held text, the guard's tail). After
// a forward has streamed the weights through the caches each is a memory miss; asked for a few
// sequences ahead, they overlap.
void prefetch_decide_state(const Sequence& s, int level);
void prefetch_render_state(const Sequence& s);

}  // namespace tessera::engine
