// The "standard" sampler plugin loaded through the registry: descriptor and options, greedy ties,
// penalties against their formulas, determinism across thread counts and batch compositions,
// raw logprobs against a double-precision log_softmax, and a DeepSeek-V4-sized vocabulary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <vector>

#include "ops/compute_threads.hpp"
#include "sampler_harness.hpp"
#include "util/check.hpp"

namespace tessera::sampler_test {
namespace {

std::vector<float> random_logits(size_t vocab, uint32_t seed, float scale = 2.0f) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> logits(vocab);
  for (float& l : logits) l = normal(engine);
  return logits;
}

// ------------------------------------------------------------------ descriptor and options

TEST(SamplerPlugin, DescriptorDescribesACpuSampler) {
  const LoadedPlugin& plugin = standard_plugin();
  EXPECT_EQ(plugin.kind(), TS_KIND_SAMPLER);
  EXPECT_EQ(plugin.name(), "standard");
  const auto capabilities = nlohmann::json::parse(plugin.descriptor->capabilities_json);
  EXPECT_EQ(capabilities.at("devices"), nlohmann::json::array({"cpu"}));
  const auto schema = nlohmann::json::parse(plugin.descriptor->options_schema_json);
  EXPECT_EQ(schema.at("properties").at("threads").at("maximum"), 256);
  EXPECT_FALSE(schema.at("additionalProperties").get<bool>());
  const auto build = nlohmann::json::parse(plugin.descriptor->build_info_json);
  EXPECT_TRUE(build.contains("compiler"));
}

TEST(SamplerPlugin, RejectsBadOptionsAndOtherDevices) {
  const LoadedPlugin& plugin = standard_plugin();
  EXPECT_THROW(registry().create(plugin, R"({"threads":-1})", kCpu), Error);
  EXPECT_THROW(registry().create(plugin, R"({"threads":257})", kCpu), Error);
  EXPECT_THROW(registry().create(plugin, R"({"threads":"4"})", kCpu), Error);
  EXPECT_THROW(registry().create(plugin, R"({"thread":4})", kCpu), Error);
  EXPECT_THROW(registry().create(plugin, "{}", ts_device{TS_DEVICE_CUDA, 0, nullptr}), Error);
  EXPECT_TRUE(registry().create(plugin, "{}", kCpu));
  // The plugin checks by itself too, without the registry's schema validation.
  const ts_status s = plugin.descriptor->check_support(R"({"threads":-3})", kCpu);
  EXPECT_EQ(s.code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.message).find("threads"), std::string::npos) << s.message;
  EXPECT_EQ(plugin.descriptor->check_support(nullptr, kCpu).code, TS_OK);
}

TEST(SamplerPlugin, EmptyBatchIsFine) {
  const PluginInstance sampler = make_sampler(2);
  std::vector<ts_sampler_result> none;
  EXPECT_EQ(call_sample(sampler, {}, 10, none).code, TS_OK);
}

// ------------------------------------------------------------------ greedy

TEST(SamplerGreedy, TakesTheLowestIdAmongTiedMaxima) {
  const PluginInstance sampler = make_sampler(1);
  ts_sampling_params p = plain_params();
  p.temperature = 0.0f;
  const std::vector<float> ties = {1.0f, 3.0f, -2.0f, 3.0f, 3.0f};
  const std::vector<float> flat(7, -4.5f);
  const std::vector<float> last = {0.0f, 0.1f, 0.2f, 0.3f};
  for (uint64_t seed : {0ull, 1ull, 99ull}) {
    p.seed = seed;
    EXPECT_EQ(draw_tokens(sampler, ties, p, 20), std::vector<int32_t>(20, 1));
    EXPECT_EQ(draw_tokens(sampler, flat, p, 20), std::vector<int32_t>(20, 0));
    EXPECT_EQ(draw_tokens(sampler, last, p, 20), std::vector<int32_t>(20, 3));
  }
}

TEST(SamplerGreedy, IgnoresTruncationButNotPenalties) {
  const PluginInstance sampler = make_sampler(1);
  ts_sampling_params p = plain_params();
  p.temperature = 0.0f;
  p.top_k = 2;
  p.top_p = 0.1f;
  p.min_p = 0.9f;
  const std::vector<float> logits = {1.0f, 2.0f, 1.5f};
  EXPECT_EQ(draw_tokens(sampler, logits, p, 5), std::vector<int32_t>(5, 1));
  p.presence_penalty = 1.0f;
  const std::vector<int32_t> output = {1};
  EXPECT_EQ(draw_tokens(sampler, logits, p, 5, nullptr, &output), std::vector<int32_t>(5, 2));
}

// ------------------------------------------------------------------ penalties
// Token 0 carries the penalised logit; token 1 (in no list) is a competitor at v -/+ 1e-3, where
// v is the formula's value. Greedy picks token 0 only when its penalised logit exceeds v - 1e-3
// and token 1 only when it is below v + 1e-3, pinning the penalised logit to v within 1e-3.
void expect_penalised_value(float logit, const ts_sampling_params& params,
                            const std::vector<int32_t>& prompt, const std::vector<int32_t>& output,
                            double v, const char* what) {
  const PluginInstance sampler = make_sampler(1);
  ts_sampling_params p = params;
  p.temperature = 0.0f;
  const std::vector<float> below = {logit, static_cast<float>(v - 1e-3), -50.0f};
  const std::vector<float> above = {logit, static_cast<float>(v + 1e-3), -50.0f};
  EXPECT_EQ(draw_tokens(sampler, below, p, 1, &prompt, &output)[0], 0) << what << ": value < v";
  EXPECT_EQ(draw_tokens(sampler, above, p, 1, &prompt, &output)[0], 1) << what << ": value > v";
}

TEST(SamplerPenalties, RepetitionDividesPositiveAndMultipliesNegativeLogitsOnce) {
  ts_sampling_params p = plain_params();
  p.repetition_penalty = 1.3f;
  const double r = p.repetition_penalty;
  expect_penalised_value(2.0f, p, {0}, {}, 2.0 / r, "positive, in prompt");
  expect_penalised_value(-2.0f, p, {}, {0}, -2.0 * r, "negative, in output");
  expect_penalised_value(2.0f, p, {0, 0, 0}, {0, 0}, 2.0 / r, "repeated: applied once");
  expect_penalised_value(2.0f, p, {2}, {2}, 2.0, "other token: untouched");
  p.repetition_penalty = 0.5f;  // < 1 encourages repetition
  expect_penalised_value(2.0f, p, {0}, {}, 4.0, "penalty below one");
}

TEST(SamplerPenalties, FrequencyAndPresenceCountOutputTokensOnly) {
  ts_sampling_params p = plain_params();
  p.frequency_penalty = 0.5f;
  expect_penalised_value(1.0f, p, {}, {0, 2, 0, 0}, 1.0 - 0.5 * 3, "frequency x3");
  expect_penalised_value(1.0f, p, {0, 0}, {}, 1.0, "frequency ignores the prompt");
  p = plain_params();
  p.presence_penalty = 0.7f;
  expect_penalised_value(1.0f, p, {}, {0, 0, 0}, 1.0 - 0.7, "presence once");
  expect_penalised_value(1.0f, p, {0}, {}, 1.0, "presence ignores the prompt");
  p = plain_params();
  p.frequency_penalty = -0.25f;
  expect_penalised_value(1.0f, p, {}, {0, 0}, 1.0 + 0.5, "negative frequency");
}

TEST(SamplerPenalties, AllThreeComposeInVllmOrder) {
  ts_sampling_params p = plain_params();
  p.repetition_penalty = 1.25f;
  p.frequency_penalty = 0.3f;
  p.presence_penalty = 0.4f;
  // repetition first (3 / 1.25 = 2.4), then 2 * 0.3 + 0.4.
  expect_penalised_value(3.0f, p, {0}, {0, 0}, 3.0 / 1.25 - 0.6 - 0.4, "positive");
  expect_penalised_value(-1.0f, p, {}, {0}, -1.0 * 1.25 - 0.3 - 0.4, "negative");
}

// ------------------------------------------------------------------ determinism

struct Batch {
  std::vector<std::vector<float>> logits;
  std::vector<std::vector<int32_t>> prompts, outputs;
  std::vector<ts_sampler_row> rows;
};

// 48 varied rows over a 1000-token vocabulary; several rows share a seed with different counters.
Batch varied_batch() {
  Batch b;
  constexpr int kRows = 48;
  std::mt19937 engine(2024);
  for (int i = 0; i < kRows; ++i) {
    b.logits.push_back(random_logits(1000, 100 + i));
    b.prompts.push_back({static_cast<int32_t>(engine() % 1000), 5, 6});
    b.outputs.push_back({static_cast<int32_t>(engine() % 1000), 7, 7});
  }
  for (int i = 0; i < kRows; ++i) {
    ts_sampling_params p = plain_params(1000 + i / 3);
    p.temperature = (i % 4 == 0) ? 0.0f : 0.5f + 0.1f * (i % 7);
    p.top_k = (i % 3 == 0) ? 0 : 20 + i;
    p.top_p = (i % 5 == 0) ? 1.0f : 0.9f;
    p.min_p = (i % 6 == 0) ? 0.05f : 0.0f;
    p.repetition_penalty = (i % 2 == 0) ? 1.1f : 1.0f;
    p.frequency_penalty = 0.1f * (i % 3);
    p.logprobs = 1;
    p.top_logprobs = i % 5;
    b.rows.push_back(make_row(b.logits[i], p, /*counter=*/i % 3, &b.prompts[i], &b.outputs[i]));
  }
  return b;
}

std::vector<int32_t> tokens_of(const PluginInstance& sampler,
                               const std::vector<ts_sampler_row>& rows) {
  ResultBuffers out(rows.size(), 4);
  const ts_status s = call_sample(sampler, rows, 1000, out.results);
  EXPECT_EQ(s.code, TS_OK) << (s.message ? s.message : "");
  std::vector<int32_t> tokens;
  for (const auto& r : out.results) tokens.push_back(r.token);
  return tokens;
}

TEST(SamplerDeterminism, SameTokensWhateverTheThreadCount) {
  const Batch b = varied_batch();
  const auto one = tokens_of(make_sampler(1), b.rows);
  // 0: the host's compute threads (its parallel_for), here with a helper even on one core.
  const int compute_threads_before = ops::compute_threads();
  ops::set_compute_threads(2);
  for (const int threads : {0, 2, 3, 8}) {
    const PluginInstance sampler = make_sampler(threads);
    EXPECT_EQ(tokens_of(sampler, b.rows), one) << threads << " threads";
    EXPECT_EQ(tokens_of(sampler, b.rows), one) << threads << " threads, second call";
  }
  ops::set_compute_threads(compute_threads_before);
  // Sanity: the batch is not trivially constant.
  EXPECT_GT(std::set<int32_t>(one.begin(), one.end()).size(), 20u);
}

TEST(SamplerDeterminism, SameTokensWhateverTheBatchComposition) {
  const Batch b = varied_batch();
  const PluginInstance sampler = make_sampler(3);
  const auto together = tokens_of(sampler, b.rows);
  for (size_t i = 0; i < b.rows.size(); ++i) {
    EXPECT_EQ(tokens_of(sampler, {b.rows[i]})[0], together[i]) << "row " << i << " alone";
  }
  std::vector<ts_sampler_row> reversed(b.rows.rbegin(), b.rows.rend());
  auto tokens = tokens_of(sampler, reversed);
  std::reverse(tokens.begin(), tokens.end());
  EXPECT_EQ(tokens, together);
  // Interleaved with unrelated rows, each row still gets its token.
  std::vector<ts_sampler_row> mixed;
  for (size_t i = 0; i < b.rows.size(); ++i) {
    mixed.push_back(b.rows[(i * 7) % b.rows.size()]);
    mixed.push_back(b.rows[i]);
  }
  tokens = tokens_of(sampler, mixed);
  for (size_t i = 0; i < b.rows.size(); ++i) {
    EXPECT_EQ(tokens[2 * i + 1], together[i]) << "row " << i << " in a mixed batch";
  }
}

TEST(SamplerDeterminism, TheStreamDependsOnSeedAndCounter) {
  const PluginInstance sampler = make_sampler(1);
  const std::vector<float> flat(64, 0.0f);  // uniform: every draw shows the raw randomness
  const auto a = draw_tokens(sampler, flat, plain_params(1), 200);
  const auto a_again = draw_tokens(sampler, flat, plain_params(1), 200);
  const auto b = draw_tokens(sampler, flat, plain_params(2), 200);
  const auto a_shifted = draw_tokens(sampler, flat, plain_params(1), 200, nullptr, nullptr, 1);
  EXPECT_EQ(a, a_again);
  EXPECT_NE(a, b);
  EXPECT_EQ(std::vector<int32_t>(a.begin() + 1, a.end()),
            std::vector<int32_t>(a_shifted.begin(), a_shifted.end() - 1));
  int same = 0;
  int adjacent_repeats = 0;  // consecutive counters must give independent draws too
  for (size_t i = 0; i < a.size(); ++i) {
    same += a[i] == b[i];
    if (i > 0) adjacent_repeats += a[i] == a[i - 1];
  }
  EXPECT_LT(same, 20);  // 1/64 chance each: ~3 expected
  EXPECT_LT(adjacent_repeats, 20);
  EXPECT_GT(std::set<int32_t>(a.begin(), a.end()).size(), 40u);
}

// ------------------------------------------------------------------ logprobs

TEST(SamplerLogprobs, RawLogSoftmaxOfChosenAndTopTokens) {
  const PluginInstance sampler = make_sampler(2);
  std::vector<float> logits = random_logits(5000, 7, 3.0f);
  logits[10] = logits[20] = logits[30] = 15.0f;  // a three-way tie at the top
  const auto reference = reference_log_softmax(logits);
  ts_sampling_params p = plain_params(77);
  p.temperature = 0.6f;  // logprobs stay raw: none of these changes them
  p.repetition_penalty = 1.5f;
  p.top_k = 40;
  p.logprobs = 1;
  p.top_logprobs = 8;
  const std::vector<int32_t> prompt = {10, 11, 12};
  std::vector<ts_sampler_row> rows;
  for (uint64_t c = 0; c < 16; ++c) rows.push_back(make_row(logits, p, c, &prompt));
  ResultBuffers out(rows.size(), 10);
  ASSERT_EQ(call_sample(sampler, rows, 5000, out.results).code, TS_OK);

  std::vector<int32_t> by_rank(logits.size());
  std::iota(by_rank.begin(), by_rank.end(), 0);
  std::stable_sort(by_rank.begin(), by_rank.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  for (const auto& r : out.results) {
    ASSERT_GE(r.token, 0);
    EXPECT_NEAR(r.logprob, reference[r.token], 1e-5);
    ASSERT_EQ(r.n_top, 8);
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(r.top_tokens[i], by_rank[i]) << "rank " << i;
      EXPECT_NEAR(r.top_logprobs[i], reference[by_rank[i]], 1e-5) << "rank " << i;
    }
  }
  EXPECT_EQ(out.results[0].top_tokens[0], 10);  // equal logits: lower id first
  EXPECT_EQ(out.results[0].top_tokens[2], 30);
}

TEST(SamplerLogprobs, CountsAndCapacity) {
  const PluginInstance sampler = make_sampler(1);
  const std::vector<float> logits = {0.5f, -1.0f, 2.0f};
  ts_sampling_params p = plain_params();
  p.logprobs = 1;
  p.top_logprobs = 5;  // more than the vocabulary: all three come back
  ResultBuffers out(1, 5);
  ASSERT_EQ(call_sample(sampler, {make_row(logits, p)}, 3, out.results).code, TS_OK);
  EXPECT_EQ(out.results[0].n_top, 3);
  EXPECT_EQ(out.top_tokens[0], 2);
  EXPECT_EQ(out.top_tokens[2], 1);

  p.logprobs = 0;
  p.top_logprobs = 0;
  ResultBuffers none(1, 0);
  ASSERT_EQ(call_sample(sampler, {make_row(logits, p)}, 3, none.results).code, TS_OK);
  EXPECT_EQ(none.results[0].n_top, 0);

  p.top_logprobs = 3;  // capacity 2 is too small: an error, never a truncated answer
  ResultBuffers small(1, 2);
  const ts_status s = call_sample(sampler, {make_row(logits, p)}, 3, small.results);
  EXPECT_EQ(s.code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.message).find("top_capacity"), std::string::npos) << s.message;
  EXPECT_EQ(small.results[0].token, -1);
}

// ------------------------------------------------------------------ DeepSeek-V4 vocabulary

TEST(SamplerLargeVocab, Vocab129280) {
  constexpr int32_t kVocab = 129280;
  const PluginInstance sampler = make_sampler(2);
  std::vector<float> logits = random_logits(kVocab, 31, 1.5f);
  logits[kVocab - 1] = 12.0f;
  ts_sampling_params greedy = plain_params();
  greedy.temperature = 0.0f;
  EXPECT_EQ(draw_tokens(sampler, logits, greedy, 2)[0], kVocab - 1);

  // Nucleus over a long flat tail (the heavy token holds little of the mass) and a combined set.
  logits[kVocab - 1] = 6.0f;
  const auto reference = reference_log_softmax(logits);
  ts_sampling_params nucleus = plain_params(5);
  nucleus.top_p = 0.5f;
  ts_sampling_params combined = plain_params(6);
  combined.temperature = 0.7f;
  combined.top_k = 50;
  combined.top_p = 0.9f;
  combined.min_p = 0.02f;
  combined.repetition_penalty = 1.2f;
  combined.frequency_penalty = 0.5f;
  combined.logprobs = 1;
  combined.top_logprobs = 20;
  ts_sampling_params wide_k = plain_params(7);  // a large k takes the selection path, not the heap
  wide_k.temperature = 1.3f;
  wide_k.top_k = 3000;
  wide_k.min_p = 0.001f;
  const std::vector<int32_t> prompt = {1, 2, 3, kVocab - 1};
  const std::vector<int32_t> output = {4, 4, 5};
  for (const ts_sampling_params& p : {nucleus, combined, wide_k}) {
    const auto exact = reference_distribution(reference_penalised(logits, p, prompt, output), p);
    std::vector<ts_sampler_row> rows;
    for (uint64_t c = 0; c < 64; ++c) rows.push_back(make_row(logits, p, c, &prompt, &output));
    ResultBuffers out(rows.size(), 20);
    ASSERT_EQ(call_sample(sampler, rows, kVocab, out.results).code, TS_OK);
    std::set<int32_t> distinct;
    for (const auto& r : out.results) {
      ASSERT_GE(r.token, 0);
      EXPECT_GT(exact[r.token], 0.0) << "token " << r.token << " is outside the kept set";
      distinct.insert(r.token);
      if (p.logprobs) EXPECT_NEAR(r.logprob, reference[r.token], 1e-4);
      if (p.top_logprobs) EXPECT_EQ(r.n_top, 20);
    }
    EXPECT_GT(distinct.size(), 5u);
  }
}

}  // namespace
}  // namespace tessera::sampler_test
