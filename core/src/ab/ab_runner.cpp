#include "ab/ab_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "ab/engine_generation.hpp"
#include "ab/teacher_forced.hpp"
#include "ops/compute_threads.hpp"
#include "runtime/generator.hpp"
#include "util/check.hpp"

namespace tessera::ab {

namespace {

ArmRun run_arm(Arm& arm, const std::vector<int32_t>& prompt, uint64_t seed, int64_t max_tokens) {
  GenerateRequest request;
  request.prompt = prompt;
  request.sampling = arm.sampling_params(seed);
  request.max_tokens = max_tokens;
  request.repetition_mode = arm.repetition_mode;
  request.repetition = arm.repetition;
  GenerateResult result = generate(*arm.runtime, *arm.tokenizer, request);
  ArmRun run;
  run.tokens = std::move(result.tokens);
  run.text = std::move(result.text);
  run.finish_reason = std::move(result.finish_reason);
  run.repetition_hits = result.repetition_hits;
  run.prompt_tokens = result.prompt_tokens;
  run.ttft_s = result.prefill_seconds;
  run.decode_s = result.decode_seconds;
  return run;
}

// How the arm samples, for the TV of its distribution (sampling_distribution.hpp): the values its
// sampler receives.
SamplingShape sampling_shape(const Arm& arm) {
  const ts_sampling_params p = arm.sampling_params(0);
  return {p.temperature, p.top_k, p.top_p, p.min_p};
}

bool needs_engine(const ArmPair& arms) {
  return arms.a.config.executor.tensor_parallel > 1 || arms.b.config.executor.tensor_parallel > 1;
}

// What Executor's constructor does for its own arm; repeated before each arm's turn because the
// setting is process-wide and the arms alternate.
void use_blas_threads_of(const Arm& arm) {
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int total =
      arm.config.executor.threads > 0 ? static_cast<int>(arm.config.executor.threads) : hw;
  const int tp = static_cast<int>(std::max<int64_t>(1, arm.config.executor.tensor_parallel));
  ops::set_compute_threads(std::max(1, total / tp));
}

// Generates with one arm on the chosen path.
class FreeRunner {
 public:
  FreeRunner(ArmPair& arms, bool engine) : arms_(arms) {
    if (engine) {
      use_blas_threads_of(arms.a);
      engine_a_ = std::make_unique<EngineGeneration>(arms.a);
      use_blas_threads_of(arms.b);
      engine_b_ = std::make_unique<EngineGeneration>(arms.b);
    }
  }
  ArmRun run(bool arm_b, const std::vector<int32_t>& prompt, uint64_t seed, int64_t max_tokens) {
    Arm& arm = arm_b ? arms_.b : arms_.a;
    EngineGeneration* engine = arm_b ? engine_b_.get() : engine_a_.get();
    if (engine == nullptr) return run_arm(arm, prompt, seed, max_tokens);
    use_blas_threads_of(arm);
    return engine->run(prompt, seed, max_tokens);
  }

 private:
  ArmPair& arms_;
  std::unique_ptr<EngineGeneration> engine_a_, engine_b_;
};

}  // namespace

ArmDescription describe_arm(const Arm& arm) {
  ArmDescription d;
  d.name = arm.name;
  d.config_path = arm.config_path.string();
  d.model_dir = arm.runtime->options().model_dir.lexically_normal().string();
  d.kv_plugin = arm.runtime->kv_format().name();
  d.attention_plugin = arm.runtime->attention().name();
  d.sampler_plugin = arm.runtime->sampler().name();
  d.sampler_options = arm.runtime->options().sampler_options_json;
  d.kv_bytes_per_entry = arm.runtime->kv_format().main_layout().bytes_per_entry;
  d.sampling = arm.sampling;
  d.sampling_source = arm.sampling_source;
  d.repetition_mode = arm.repetition_mode;
  d.synthetic_tokenizer = arm.tokenizer_is_synthetic;
  d.tensor_parallel = arm.config.executor.tensor_parallel;
  return d;
}

AbReport run_ab(ArmPair& arms, const std::vector<AbPrompt>& prompts, const AbOptions& options,
                const ProgressFn& progress) {
  TS_CHECK(options.max_tokens > 0, "A/B: max_tokens must be positive, got {}", options.max_tokens);
  TS_CHECK(options.seeds > 0, "A/B: seeds must be positive, got {}", options.seeds);
  TS_CHECK(!prompts.empty(), "A/B: no prompts");
  const auto start = std::chrono::steady_clock::now();
  AbReport report;
  report.options = options;
  report.arms = {describe_arm(arms.a), describe_arm(arms.b)};
  report.differences = config_differences(arms.a, arms.b);
  report.shared_weights = arms.shared_weights;
  const bool engine = needs_engine(arms);
  report.path = engine ? "engine" : "runtime";
  for (const AbPrompt& p : prompts) {
    TS_CHECK(!p.token_ids.empty(), "A/B: prompt `{}` is not tokenized", p.id);
    report.prompts.push_back({p.id, p.kind, static_cast<int64_t>(p.token_ids.size())});
  }
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };

  auto free = std::make_unique<FreeRunner>(arms, engine);
  if (options.warmup) {
    say("warm-up: one short generation per arm (not timed)");
    const int64_t n = std::min<int64_t>(4, options.max_tokens);
    free->run(false, prompts.front().token_ids, options.seed_base, n);
    free->run(true, prompts.front().token_ids, options.seed_base, n);
  }

  const int64_t total = static_cast<int64_t>(prompts.size()) * options.seeds;
  for (size_t i = 0; i < prompts.size(); ++i) {
    for (int64_t k = 0; k < options.seeds; ++k) {
      const int64_t index = static_cast<int64_t>(report.runs.size());
      say(fmt::format("free-running {}/{}: prompt `{}` seed {}", index + 1, total, prompts[i].id,
                      options.seed_base + static_cast<uint64_t>(k)));
      RunPair pair;
      pair.prompt = i;
      pair.seed = options.seed_base + static_cast<uint64_t>(k);
      if (index % 2 == 0) {
        pair.a = free->run(false, prompts[i].token_ids, pair.seed, options.max_tokens);
        pair.b = free->run(true, prompts[i].token_ids, pair.seed, options.max_tokens);
      } else {
        pair.b = free->run(true, prompts[i].token_ids, pair.seed, options.max_tokens);
        pair.a = free->run(false, prompts[i].token_ids, pair.seed, options.max_tokens);
      }
      pair.first_divergence = first_divergence(pair.a.tokens, pair.b.tokens);
      pair.identical = pair.first_divergence < 0 && pair.a.finish_reason == pair.b.finish_reason;
      // Same tokens, different endings (one stopped where the other went on to the limit):
      // they part at the decision after the last token.
      if (!pair.identical && pair.first_divergence < 0)
        pair.first_divergence = static_cast<int64_t>(pair.a.tokens.size());
      report.runs.push_back(std::move(pair));
    }
  }

  free.reset();  // the engines release the runtimes' pools before scoring uses them

  // Teacher-forced: every distinct (prompt, arm-A output), in run order.
  for (const RunPair& pair : report.runs) {
    auto same = std::find_if(report.sequences.begin(), report.sequences.end(),
                             [&](const ScoredSequence& s) {
                               return s.prompt == pair.prompt && s.continuation == pair.a.tokens;
                             });
    if (same != report.sequences.end()) {
      same->seeds.push_back(pair.seed);
      continue;
    }
    ScoredSequence seq;
    seq.prompt = pair.prompt;
    seq.seeds = {pair.seed};
    seq.prompt_tokens = static_cast<int64_t>(prompts[pair.prompt].token_ids.size());
    seq.continuation = pair.a.tokens;
    report.sequences.push_back(std::move(seq));
  }
  std::unique_ptr<Executor> exec_a, exec_b;
  if (engine) {
    exec_a = std::make_unique<Executor>(*arms.a.runtime,
                                        static_cast<int>(arms.a.config.executor.tensor_parallel),
                                        static_cast<int>(arms.a.config.executor.threads),
                                        static_cast<int>(arms.a.config.executor.reduction_parts));
    exec_b = std::make_unique<Executor>(*arms.b.runtime,
                                        static_cast<int>(arms.b.config.executor.tensor_parallel),
                                        static_cast<int>(arms.b.config.executor.threads),
                                        static_cast<int>(arms.b.config.executor.reduction_parts));
  }
  const ArmShapes shapes = {sampling_shape(arms.a), sampling_shape(arms.b)};
  for (size_t s = 0; s < report.sequences.size(); ++s) {
    ScoredSequence& seq = report.sequences[s];
    say(fmt::format("teacher-forced {}/{}: prompt `{}`, {} + {} tokens", s + 1,
                    report.sequences.size(), prompts[seq.prompt].id, seq.prompt_tokens,
                    seq.continuation.size()));
    seq.positions =
        engine ? score_teacher_forced(*exec_a, *exec_b, prompts[seq.prompt].token_ids,
                                      seq.continuation, shapes)
               : score_teacher_forced(*arms.a.runtime, *arms.b.runtime,
                                      prompts[seq.prompt].token_ids, seq.continuation, shapes);
  }
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace tessera::ab
