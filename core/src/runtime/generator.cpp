#include "runtime/generator.hpp"

#include <algorithm>
#include <chrono>

#include "plugins/sampler_call.hpp"
#include "tokenizer/incremental_detokenizer.hpp"
#include "util/check.hpp"

namespace tessera {

ts_sampling_params neutral_sampling() {
  ts_sampling_params p{};
  p.temperature = 0.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.repetition_penalty = 1.0f;
  p.frequency_penalty = 0.0f;
  p.presence_penalty = 0.0f;
  p.seed = 0;
  p.logprobs = 0;
  p.top_logprobs = 0;
  return p;
}

GenerateResult generate(Runtime& runtime, const tokenizer::Tokenizer& tokenizer,
                        const GenerateRequest& request,
                        const std::function<void(std::string_view)>& on_text) {
  const dsv4::ModelConfig& cfg = runtime.model_config();
  const int64_t context_limit = runtime.options().max_context > 0 ? runtime.options().max_context
                                                                  : cfg.max_position_embeddings;
  TS_CHECK(!request.prompt.empty(), "generate: empty prompt");
  TS_CHECK(static_cast<int64_t>(request.prompt.size()) < context_limit,
           "prompt of {} tokens does not fit the context limit of {}", request.prompt.size(),
           context_limit);
  std::vector<int32_t> stops = request.stop_ids;
  for (int64_t id : cfg.eos_token_ids) stops.push_back(static_cast<int32_t>(id));
  if (stops.empty()) stops.push_back(static_cast<int32_t>(cfg.eos_token_id));

  GenerateResult result;
  result.prompt_tokens = static_cast<int64_t>(request.prompt.size());
  auto seq = runtime.new_sequence();
  tokenizer::IncrementalDetokenizer detok(tokenizer, /*skip_special_tokens=*/true);
  generation::RepetitionGuard guard(request.repetition,
                                    [&tokenizer](int32_t id) { return tokenizer.token_bytes(id); });
  const auto& sampler = runtime.sampler();
  RowHints hints;

  auto start = std::chrono::steady_clock::now();
  dsv4::ForwardBatch prefill;
  prefill.chunks.push_back({seq.get(), request.prompt, false});
  dsv4::Logits logits = runtime.model().forward(prefill);
  result.prefill_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  start = std::chrono::steady_clock::now();
  result.finish_reason = "length";
  for (int64_t step = 0; step < request.max_tokens; ++step) {
    ts_sampler_row row{};
    row.logits = logits.row(0);
    row.params = request.sampling;
    row.prompt_tokens = request.prompt.data();
    row.n_prompt_tokens = static_cast<int64_t>(request.prompt.size());
    row.output_tokens = result.tokens.data();
    row.n_output_tokens = static_cast<int64_t>(result.tokens.size());
    row.rng_counter = static_cast<uint64_t>(step);
    ts_sampler_result out{};
    const int64_t first_row = 0;
    gather_row_hints(logits, {&first_row, 1}, hints);
    sampler.check(call_sampler(sampler, {&row, 1}, hints, static_cast<int32_t>(logits.vocab), &out),
                  "sample");
    const int32_t token = out.token;
    if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
      result.finish_reason = "stop";
      break;
    }
    result.tokens.push_back(token);
    const std::string delta = detok.push(token);
    if (!delta.empty()) {
      result.text += delta;
      if (on_text) on_text(delta);
    }
    if (request.repetition_mode != "off" && guard.push(token)) {
      ++result.repetition_hits;
      if (request.repetition_mode == "stop") {
        result.finish_reason = "repetition";
        break;
      }
    }
    if (seq->length() + 1 >= context_limit) break;  // "length": the context is full
    dsv4::ForwardBatch step_batch;
    step_batch.chunks.push_back(
        {seq.get(), std::span<const int32_t>(&result.tokens.back(), 1), false});
    logits = runtime.model().forward(step_batch);
  }
  const std::string tail = detok.finish();
  if (!tail.empty()) {
    result.text += tail;
    if (on_text) on_text(tail);
  }
  result.decode_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tessera
