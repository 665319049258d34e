// Test-side helpers for the engine: a runtime over a tiny parity checkpoint with the in-tree
// plugins, the test tokenizer, deterministic prompts, and a collector that turns a request's event
// stream into its final output (and checks the stream's own invariants on the way).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "executor/step_plan.hpp"
#include "runtime/runtime.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::engine_test {

inline std::filesystem::path fixture_dir(const std::string& name = "tiny-a") {
  return std::filesystem::path(TESSERA_SOURCE_DIR) / "tests/data/parity" / name;
}

inline RuntimeOptions runtime_options(double memory_gib = 0.02, int64_t page_size = 16,
                                      const std::string& kv_options = "{}",
                                      const std::string& fixture = "tiny-a") {
  RuntimeOptions o;
  o.model_dir = fixture_dir(fixture);
  o.plugin_dirs = {TESSERA_PLUGIN_DIR};
  o.kv_options_json = kv_options;
  o.memory_gib = memory_gib;
  o.page_size = page_size;
  o.max_context = 4096;
  return o;
}

inline const tokenizer::Tokenizer& test_tokenizer() {
  static const tokenizer::Tokenizer t = tokenizer::Tokenizer::from_file(
      std::filesystem::path(TESSERA_SOURCE_DIR) / "tests/data/tokenizer/tokenizer.json");
  return t;
}

// Deterministic pseudo-random prompt ids in [3, vocab) (0..2 are BOS / EOS / pad).
inline std::vector<int32_t> make_prompt(uint64_t seed, int64_t length, int64_t vocab = 512) {
  std::vector<int32_t> ids(static_cast<size_t>(length));
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 12345;
  for (auto& id : ids) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    id = static_cast<int32_t>(3 + x % static_cast<uint64_t>(vocab - 3));
  }
  return ids;
}

// The next step's chunks for sequences 1..n (executor tests): up to `chunk` more prompt tokens
// each, or, once its prompt is in, the token fed back in `last`.
inline std::vector<PlannedChunk> next_chunks(const std::vector<std::vector<int32_t>>& prompts,
                                             std::vector<size_t>& done,
                                             const std::vector<int32_t>& last, size_t chunk) {
  std::vector<PlannedChunk> chunks;
  for (size_t s = 0; s < prompts.size(); ++s) {
    PlannedChunk c;
    c.sequence = s + 1;
    if (done[s] < prompts[s].size()) {
      const size_t n = std::min(chunk, prompts[s].size() - done[s]);
      c.tokens.assign(prompts[s].begin() + static_cast<long>(done[s]),
                      prompts[s].begin() + static_cast<long>(done[s] + n));
      done[s] += n;
    } else {
      c.tokens = {last[s]};
    }
    chunks.push_back(std::move(c));
  }
  return chunks;
}

// Drives the model by hand: one prefill step of `inputs` (all logits), then steps - 1 greedy
// decode steps, each sequence fed its own argmax. visit(step, logits, inputs_of_that_step)
// after each step. For tests that compare logits bit for bit across runs.
template <class Visit>
void forward_greedy_steps(Runtime& rt, std::vector<std::vector<int32_t>> inputs, int steps,
                          const Visit& visit) {
  std::vector<std::unique_ptr<SequenceKv>> seqs;
  for (size_t s = 0; s < inputs.size(); ++s) seqs.push_back(rt.new_sequence());
  for (int step = 0; step < steps; ++step) {
    dsv4::ForwardBatch batch;
    for (size_t s = 0; s < inputs.size(); ++s)
      batch.chunks.push_back({seqs[s].get(), inputs[s], /*all_logits=*/step == 0});
    const dsv4::Logits logits = rt.model().forward(batch);
    visit(step, logits, inputs);
    for (size_t s = 0; s < inputs.size(); ++s) {  // greedy next token from the chunk's last row
      const int64_t last =
          logits.chunk_rows[s] + (step == 0 ? static_cast<int64_t>(inputs[s].size()) - 1 : 0);
      const float* row = logits.row(last);
      inputs[s] = {static_cast<int32_t>(std::max_element(row, row + logits.vocab) - row)};
    }
  }
}

inline engine::Request greedy(std::vector<int32_t> prompt, int64_t max_tokens) {
  engine::Request r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0;
  r.ignore_eos = true;
  return r;
}

inline engine::Request sampled(std::vector<int32_t> prompt, int64_t max_tokens, uint64_t seed) {
  engine::Request r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.8;
  r.sampling.top_p = 0.95;
  r.sampling.seed = seed;
  r.ignore_eos = true;
  return r;
}

struct Output {
  std::vector<int32_t> tokens;
  std::string text;
  std::optional<engine::FinishReason> finish;
  std::optional<std::string> stop_string;
  std::optional<int32_t> stop_token;
  engine::Usage usage;
  std::string error;
  int64_t events = 0;
  int64_t events_after_finish = 0;
};

// Collects the events of many requests; wait() blocks until each has finished.
class Collector {
 public:
  engine::EventCallback callback() {
    return [this](const engine::Event& e) {
      std::lock_guard lock(mutex_);
      Output& o = outputs_[e.request_id];
      if (o.finish) ++o.events_after_finish;
      ++o.events;
      o.tokens.insert(o.tokens.end(), e.tokens.begin(), e.tokens.end());
      o.text += e.text;
      if (e.finish) {
        o.finish = e.finish;
        o.stop_string = e.stop_string;
        o.stop_token = e.stop_token;
        o.usage = e.usage;
        o.error = e.error;
        ++finished_;
        done_.notify_all();
      }
    };
  }
  void wait(size_t requests) {
    std::unique_lock lock(mutex_);
    ASSERT_TRUE(
        done_.wait_for(lock, std::chrono::seconds(120), [&] { return finished_ >= requests; }))
        << "only " << finished_ << " of " << requests << " requests finished";
  }
  Output get(uint64_t id) {
    std::lock_guard lock(mutex_);
    return outputs_[id];
  }
  int64_t tokens_so_far(uint64_t id) {
    std::lock_guard lock(mutex_);
    return static_cast<int64_t>(outputs_[id].tokens.size());
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  std::map<uint64_t, Output> outputs_;
  size_t finished_ = 0;
};

// Submits every request at once and returns the outputs in request order.
inline std::vector<Output> run_all(engine::Engine& engine,
                                   const std::vector<engine::Request>& requests) {
  Collector c;
  std::vector<uint64_t> ids;
  for (const auto& r : requests) ids.push_back(engine.submit(r, c.callback()));
  c.wait(requests.size());
  engine.wait_idle();
  std::vector<Output> out;
  for (uint64_t id : ids) out.push_back(c.get(id));
  return out;
}

inline engine::EngineOptions engine_options(int64_t max_running = 64, int64_t max_batched = 512,
                                            int64_t chunk = 128, bool prefix_cache = false) {
  engine::EngineOptions o;
  o.max_running_sequences = max_running;
  o.max_batched_tokens = max_batched;
  o.chunked_prefill_size = chunk;
  o.prefix_cache = prefix_cache;
  o.max_tokens_limit = 4096;
  o.defaults.max_tokens = 64;
  return o;
}

}  // namespace tessera::engine_test
