// What one sampled token does to its sequence: the reasoning budget may replace it by </think>,
// it is appended, EOS / stop ids / stop strings (matched across tokens, never leaked), the
// repetition guard and the length limits may end the sequence, and its text goes out as an event.
// It touches only the sequence (and reads the rules and the tokenizer). (Run for a step's
// sequences on the compute threads it saved ~4 us of ~35 per 64-sequence step: not done.)
#pragma once

#include <cstdint>
#include <optional>
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

struct TokenOutcome {
  Event event;                         // tokens, text, logprobs, stop fields
  std::optional<FinishReason> finish;  // set: the sequence ends with this event
  bool repetition_hit = false;         // the guard saw a loop at this token
};

// token.token must be >= 0 (a failed row is the caller's to report).
TokenOutcome apply_token(Sequence& s, const SampledToken& token, const TokenRules& rules);

// apply_token's reads of one sequence, asked for ahead of time (hints only: nothing is read). A
// forward streams the weights through the caches, so afterwards each line apply_token touches is
// a memory miss, one after the other (~0.4 us per sequence at 64 sequences); asked for a few
// sequences ahead, they overlap. Level 1: the Sequence's own lines; level 2, once those arrived:
// what its members point to (the token tails, the detokenizer, the held stop text).
void prefetch_token_state(const Sequence& s, int level);

}  // namespace tessera::engine
