// Fuzzes parse_serve_request: the host side of the engine table's submit (docs/http.md, "The
// engine table as frontends see it"), which reads whatever JSON a frontend plugin — ours or a
// third party's — hands it: text or token-id prompts, chat messages rendered with the DeepSeek-V4
// template, sampling fields. Beyond "no crash, no UB", it checks what the parser promises:
//  - only serve::InvalidRequest escapes, and kTooLong only for a prompt that does not fit;
//  - an accepted request fits: a non-empty prompt of real token ids, prompt + max_tokens within
//    the context, n and top_logprobs within the limits, every sampling field in its range.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "serve/serve_request.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

using tessera::serve::InvalidRequest;
using tessera::serve::ServeLimits;
using tessera::serve::ServeRequest;
using tessera::tokenizer::Tokenizer;

void require(bool condition, const char* what, std::string_view input) {
  if (condition) return;
  std::fprintf(stderr, "fuzz_serve_request invariant broken: %s\ninput: %.*s\n", what,
               static_cast<int>(input.size()), input.data());
  std::abort();
}

const Tokenizer& fixture() {
  static const Tokenizer tokenizer = Tokenizer::from_file(
      std::filesystem::path(TESSERA_TEST_DATA_DIR) / "tokenizer/tokenizer.json");
  return tokenizer;
}

ServeLimits limits() {
  ServeLimits l;
  l.max_context = 256;  // small, so that the context rule is reached often
  l.max_tokens = 128;
  l.max_n = 4;
  l.max_logprobs = 5;
  l.default_max_tokens = 64;
  return l;
}

template <class T>
bool in(const std::optional<T>& v, double lo, double hi) {
  return !v || (static_cast<double>(*v) >= lo && static_cast<double>(*v) <= hi);
}

void check_accepted(const ServeRequest& r, const ServeLimits& l, const Tokenizer& tok,
                    std::string_view input) {
  const auto& q = r.base;
  require(!q.prompt.empty(), "empty prompt accepted", input);
  for (const int32_t id : q.prompt) require(id >= 0 && id < tok.vocab_size(), "bad id", input);
  for (const int32_t id : q.stop_token_ids)
    require(id >= 0 && id < tok.vocab_size(), "bad stop id", input);
  const auto prompt = static_cast<int64_t>(q.prompt.size());
  require(prompt < l.max_context, "prompt fills the context", input);
  require(!q.max_tokens || (*q.max_tokens >= 1 && *q.max_tokens <= l.max_tokens &&
                            prompt + *q.max_tokens <= l.max_context),
          "max_tokens out of bounds", input);
  require(r.n >= 1 && r.n <= l.max_n, "n out of bounds", input);
  require(q.top_logprobs >= 0 && q.top_logprobs <= l.max_logprobs, "top_logprobs", input);
  const auto& s = q.sampling;
  require(in(s.temperature, 0, 2) && in(s.top_p, 0, 1) && in(s.min_p, 0, 1) &&
              in(s.top_k, 0, tok.vocab_size()) && in(s.repetition_penalty, 0, 10) &&
              in(s.frequency_penalty, -2, 2) && in(s.presence_penalty, -2, 2),
          "sampling field out of range", input);
  require(!s.top_p || *s.top_p > 0, "top_p = 0 accepted", input);
  for (const auto& stop : q.stop) require(!stop.empty(), "empty stop string", input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const ServeLimits l = limits();
  try {
    const ServeRequest r = tessera::serve::parse_serve_request(input, fixture(), l);
    check_accepted(r, l, fixture(), input);
  } catch (const InvalidRequest&) {
    // The documented refusal (400 / context_length_exceeded).
  }
  return 0;
}
