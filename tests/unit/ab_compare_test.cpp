// `tessera ab` end to end on the parity checkpoints (tests/ab/data/*.toml point at
// tests/data/parity/tiny-a; prompts are token ids):
//   - identical configurations: every KL exactly 0, top-1 agreement exactly 1, every free-running
//     pair identical, one copy of the weights;
//   - kv fp8 vs bf16: teacher-forced scoring of each fixture's own sequence equals an independent
//     softmax/KL computation on the two runtimes' logits, is non-zero at (nearly) every position
//     and stays within the bounds the kvcache_fp8 side documents (kv_fidelity_test: mean KL <
//     0.02, top-1 agreement >= 90%); the numbers are printed (docs/ab.md quotes them);
//   - sampler only (temperature 0.6 vs 0): the model is the same, so KL is exactly 0, while the
//     free-running outputs differ;
//   - tensor_parallel 2 vs 2 (engine path) exactly 0, 1 vs 2 within rounding;
//   - bad prompt files are refused with file and line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ab/ab_arm.hpp"
#include "ab/ab_runner.hpp"
#include "ab/ab_summary.hpp"
#include "ab/prompt_set.hpp"
#include "ab/teacher_forced.hpp"
#include "ops/gemm_nt.hpp"
#include "ops/linear.hpp"
#include "parity_fixture.hpp"

namespace tessera::ab {
namespace {

const std::filesystem::path kData = std::filesystem::path(TESSERA_SOURCE_DIR) / "tests/ab/data";
const std::vector<std::filesystem::path> kPluginDirs = {TESSERA_PLUGIN_DIR};

AbReport run_pair(ArmPair& arms, int64_t max_tokens, int64_t seeds) {
  auto prompts = load_prompts(kData / "tiny-a-prompts.jsonl");
  tokenize_prompts(prompts, arms.a.tokenizer.get(), arms.a.runtime->model_config().vocab_size);
  AbOptions options;
  options.max_tokens = max_tokens;
  options.seeds = seeds;
  return run_ab(arms, prompts, options);
}

// [model] weight_storage by config: the shipped model's weights in bf16 (the default) against all
// in fp32. Each arm loads its own copy; the bf16 GEMM widens exactly, so nothing may differ.
TEST(AbCompare, Bf16WeightStorageChangesNoTokenOfTheShippedModel) {
  ArmPair arms =
      load_arm_pair(kData / "tiny-dsv4.toml", kData / "tiny-dsv4-fp32-weights.toml", kPluginDirs);
  EXPECT_FALSE(arms.shared_weights);
  const auto& head_a = arms.a.runtime->weights()->head;  // rows or panels (weight_panels.hpp)
  EXPECT_EQ(head_a.in_bf16() || head_a.in_bf16_panels(), ops::gemm_reads_bf16_weights());
  EXPECT_FALSE(arms.b.runtime->weights()->head.in_bf16());
  EXPECT_FALSE(arms.b.runtime->weights()->head.in_bf16_panels());
  const AbReport report = run_pair(arms, 12, 2);
  ASSERT_FALSE(report.runs.empty());
  EXPECT_TRUE(report.differences.empty()) << report.differences.size() << " runs differ";
}

// [model] dtype by config: fp32 against bf16 activations on the shipped model. Each arm holds its
// own copy of the weights (bf16 activations read bf16 weights as rows, fp32 ones as panels:
// model/weight_panels.hpp), and they really compute differently: a small, nonzero divergence,
// the greedy token agreeing at most positions (bounds from a measured run, docs/ab.md).
TEST(AbCompare, Bf16ActivationsByConfigGiveASmallMeasuredDivergence) {
  if (!ops::gemm_nt_bf16_available()) {
    GTEST_SKIP() << "no AVX512_BF16: model.dtype = bf16 refused";
  }
  ArmPair arms = load_arm_pair(kData / "tiny-dsv4.toml", kData / "tiny-dsv4-bf16-activations.toml",
                               kPluginDirs);
  EXPECT_EQ(arms.shared_weights, !ops::gemm_nt_avx512_available());
  EXPECT_FALSE(arms.a.runtime->options().bf16_activations);
  EXPECT_TRUE(arms.b.runtime->options().bf16_activations);
  const AbReport report = run_pair(arms, 12, 2);
  const TeacherForcedSummary tf = summarize_teacher_forced(report);
  std::printf("bf16 activations: %lld positions, KL mean %g max %g, top-1 agreement %g\n",
              static_cast<long long>(tf.positions), tf.kl.mean, tf.kl.max, tf.top1_agreement);
  EXPECT_GT(tf.positions, 300);
  EXPECT_GT(tf.kl.max, 0.0) << "the arms computed the same: dtype had no effect";
  EXPECT_LT(tf.kl.mean, 1e-3);
  EXPECT_GT(tf.top1_agreement, 0.97);
}

TEST(AbCompare, IdenticalConfigsGiveZeroDivergence) {
  ArmPair arms = load_arm_pair(kData / "tiny-a-bf16.toml", kData / "tiny-a-bf16.toml", kPluginDirs);
  EXPECT_TRUE(arms.shared_weights);
  EXPECT_EQ(arms.a.runtime->weights().get(), arms.b.runtime->weights().get());
  EXPECT_TRUE(arms.a.tokenizer_is_synthetic);  // the parity checkpoints ship no tokenizer.json
  const AbReport report = run_pair(arms, 12, 2);
  EXPECT_TRUE(report.differences.empty());
  ASSERT_EQ(report.runs.size(), 6u);
  size_t positions = 0;
  for (const ScoredSequence& s : report.sequences) {
    ASSERT_EQ(s.positions.size(), static_cast<size_t>(s.prompt_tokens) + s.continuation.size());
    for (const PositionDivergence& p : s.positions) {
      ASSERT_EQ(p.kl, 0.0);
      ASSERT_TRUE(p.top1_agree);
      ASSERT_EQ(p.max_abs_dlogit, 0.0);
      ++positions;
    }
  }
  EXPECT_GT(positions, 350u);
  const TeacherForcedSummary tf = summarize_teacher_forced(report);
  EXPECT_EQ(tf.kl.max, 0.0);
  EXPECT_EQ(tf.kl.mean, 0.0);
  EXPECT_EQ(tf.top1_agreement, 1.0);
  EXPECT_EQ(tf.top1_disagreements, 0);
  const FreeRunningSummary fr = summarize_free_running(report);
  EXPECT_EQ(fr.exact_match_rate, 1.0);
  EXPECT_EQ(fr.identical, 6);
  for (const RunPair& r : report.runs) {
    EXPECT_EQ(r.a.tokens, r.b.tokens);
  }
  std::printf(
      "identical configs: %lld positions, KL max %g, top-1 agreement %g, %lld/%lld pairs "
      "identical\n",
      static_cast<long long>(tf.positions), tf.kl.max, tf.top1_agreement,
      static_cast<long long>(fr.identical), static_cast<long long>(fr.pairs));
}

// The two arms' logits of a teacher-forced run, for the independent check below.
std::vector<std::vector<float>> logits_of(Runtime& rt, const std::vector<int32_t>& prompt,
                                          const std::vector<int32_t>& continuation) {
  std::vector<std::vector<float>> rows;
  auto seq = rt.new_sequence();
  dsv4::ForwardBatch prefill;
  prefill.chunks.push_back({seq.get(), std::span<const int32_t>(prompt), true});
  const auto l = rt.model().forward(prefill);
  for (size_t i = 0; i < prompt.size(); ++i) {
    rows.emplace_back(l.row(static_cast<int64_t>(i)), l.row(static_cast<int64_t>(i)) + l.vocab);
  }
  for (const int32_t& t : continuation) {
    dsv4::ForwardBatch step;
    step.chunks.push_back({seq.get(), std::span<const int32_t>(&t, 1), false});
    const auto s = rt.model().forward(step);
    rows.emplace_back(s.row(0), s.row(0) + s.vocab);
  }
  return rows;
}

// KL(p || q) the plain way: probabilities first, then sum p * log(p / q).
double plain_kl(const std::vector<float>& a, const std::vector<float>& b) {
  auto probs = [](const std::vector<float>& x) {
    double m = -INFINITY, z = 0;
    for (float v : x) {
      m = std::max(m, double(v));
    }
    std::vector<double> p(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      z += p[i] = std::exp(double(x[i]) - m);
    }
    for (double& v : p) {
      v /= z;
    }
    return p;
  };
  const auto p = probs(a), q = probs(b);
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] > 0) {
      kl += p[i] * std::log(p[i] / q[i]);
    }
  }
  return kl;
}

class AbKvFormats : public ::testing::TestWithParam<std::string> {};

TEST_P(AbKvFormats, Fp8AgainstBf16OnTheFixtureSequence) {
  const auto f = testing::load_parity_fixture(GetParam());
  RuntimeOptions o;
  o.model_dir = f.dir;
  o.plugin_dirs = kPluginDirs;
  o.memory_gib = 0.05;
  o.max_context = 4096;
  Runtime bf16(o);
  o.kv_plugin = "fp8";
  Runtime fp8(o, bf16.shared_model());
  const auto scored = score_teacher_forced(bf16, fp8, f.prompt, f.decode);
  ASSERT_EQ(scored.size(), f.prompt.size() + f.decode.size());

  const auto la = logits_of(bf16, f.prompt, f.decode);
  const auto lb = logits_of(fp8, f.prompt, f.decode);
  std::vector<double> kl;
  int64_t agree = 0, positive = 0;
  double max_dlogit = 0;
  for (size_t r = 0; r < scored.size(); ++r) {
    const double expected = plain_kl(la[r], lb[r]);
    ASSERT_NEAR(scored[r].kl, expected, 1e-9 + 1e-6 * expected) << "position " << r;
    const auto top = [](const std::vector<float>& v) {
      return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
    };
    ASSERT_EQ(scored[r].top1_agree, top(la[r]) == top(lb[r])) << "position " << r;
    kl.push_back(scored[r].kl);
    agree += scored[r].top1_agree;
    positive += scored[r].kl > 0;
    max_dlogit = std::max(max_dlogit, scored[r].max_abs_dlogit);
  }
  const Distribution d = summarize(kl);
  const double top1 = static_cast<double>(agree) / static_cast<double>(scored.size());
  std::printf(
      "[%s] bf16 || fp8 teacher-forced on the fixture sequence (%zu positions): mean KL %.4e  "
      "p50 %.3e  p90 %.3e  p99 %.3e  max %.3e  top-1 %.2f%%  max |dlogit| %.3g\n",
      GetParam().c_str(), scored.size(), d.mean, d.p50, d.p90, d.p99, d.max, 100 * top1,
      max_dlogit);
  EXPECT_GT(d.mean, 0.0);
  EXPECT_GE(positive, static_cast<int64_t>(0.95 * static_cast<double>(scored.size())));
  EXPECT_LT(d.mean, 0.02);  // kv_fidelity_test's kMaxMeanKl
  EXPECT_GE(top1, 0.90);    // kv_fidelity_test's kMinTop1Agreement
}

INSTANTIATE_TEST_SUITE_P(Fixtures, AbKvFormats,
                         ::testing::ValuesIn(testing::parity_fixture_names()),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(AbCompare, Fp8AgainstBf16ThroughTheRunner) {
  ArmPair arms = load_arm_pair(kData / "tiny-a-bf16.toml", kData / "tiny-a-fp8.toml", kPluginDirs);
  EXPECT_TRUE(arms.shared_weights);
  const AbReport report = run_pair(arms, 16, 1);
  ASSERT_EQ(report.differences.size(), 1u);
  EXPECT_EQ(report.differences[0][0], "kv_cache.plugin");
  const TeacherForcedSummary tf = summarize_teacher_forced(report);
  const FreeRunningSummary fr = summarize_free_running(report);
  std::printf(
      "bf16 vs fp8 (3 prompts, A's 16-token outputs): KL mean %.4e p50 %.3e p90 %.3e p99 %.3e max "
      "%.3e; top-1 %.2f%%; |dlogprob| mean %.3e; max|dlogit| max %.3g; exact match %lld/%lld\n",
      tf.kl.mean, tf.kl.p50, tf.kl.p90, tf.kl.p99, tf.kl.max, 100 * tf.top1_agreement,
      tf.abs_dlogprob.mean, tf.max_abs_dlogit.max, static_cast<long long>(fr.identical),
      static_cast<long long>(fr.pairs));
  EXPECT_GT(tf.kl.mean, 0.0);
  EXPECT_LT(tf.kl.mean, 0.02);
  EXPECT_GE(tf.top1_agreement, 0.90);
  EXPECT_GT(tf.abs_dlogprob.mean, 0.0);
  EXPECT_EQ(report.arms[1].kv_plugin, "fp8");
  EXPECT_LT(report.arms[1].kv_bytes_per_entry, report.arms[0].kv_bytes_per_entry);
}

TEST(AbCompare, SamplerOnlyDifferenceKeepsTheModelIdentical) {
  ArmPair arms =
      load_arm_pair(kData / "tiny-a-bf16.toml", kData / "tiny-a-bf16-greedy.toml", kPluginDirs);
  EXPECT_EQ(arms.a.sampling.temperature, 0.6);
  EXPECT_EQ(arms.b.sampling.temperature, 0.0);
  const AbReport report = run_pair(arms, 16, 3);
  ASSERT_EQ(report.differences.size(), 1u);
  EXPECT_EQ(report.differences[0][0], "sampling.temperature");
  const TeacherForcedSummary tf = summarize_teacher_forced(report);
  EXPECT_EQ(tf.kl.max, 0.0);
  EXPECT_EQ(tf.top1_agreement, 1.0);
  // Greedy B gives one output per prompt whatever the seed; sampled A gives several.
  for (size_t i = 0; i + 1 < report.runs.size(); ++i) {
    if (report.runs[i].prompt == report.runs[i + 1].prompt) {
      EXPECT_EQ(report.runs[i].b.tokens, report.runs[i + 1].b.tokens);
    }
  }
  const FreeRunningSummary fr = summarize_free_running(report);
  EXPECT_LT(fr.exact_match_rate, 1.0);
  EXPECT_GT(report.sequences.size(), 3u);  // distinct A outputs across seeds
}

// tensor_parallel 2 vs 2: both arms take the engine path (engine generation, executor scoring);
// the host communicator is deterministic, so the arms agree exactly there too.
TEST(AbCompare, IdenticalTensorParallelArmsGiveZeroDivergence) {
  ArmPair arms =
      load_arm_pair(kData / "tiny-a-bf16-tp2.toml", kData / "tiny-a-bf16-tp2.toml", kPluginDirs);
  const AbReport report = run_pair(arms, 8, 1);
  EXPECT_EQ(report.path, "engine");
  const TeacherForcedSummary tf = summarize_teacher_forced(report);
  EXPECT_EQ(tf.kl.max, 0.0);
  EXPECT_EQ(tf.top1_agreement, 1.0);
  EXPECT_GT(tf.positions, 350);
  EXPECT_EQ(summarize_free_running(report).exact_match_rate, 1.0);
}

// tensor_parallel 1 vs 2 (ARCHITECTURE.md: TP must give the same tokens as TP = 1). Sharded
// matmuls and the all-reduce sum in another order, so logits may differ by rounding: KL tiny,
// top-1 agreement (almost) total, and the engine-path scoring of the TP = 1 arm agrees with the
// runtime-path scoring of the same arm pair run without tensor parallelism.
TEST(AbCompare, TensorParallelOneAgainstTwo) {
  ArmPair arms =
      load_arm_pair(kData / "tiny-a-bf16.toml", kData / "tiny-a-bf16-tp2.toml", kPluginDirs);
  const AbReport report = run_pair(arms, 8, 1);
  EXPECT_EQ(report.path, "engine");
  ASSERT_EQ(report.differences.size(), 1u);
  EXPECT_EQ(report.differences[0][0], "executor.tensor_parallel");
  const TeacherForcedSummary tf = summarize_teacher_forced(report);
  std::printf(
      "tensor_parallel 1 vs 2: %lld positions, KL mean %.3e max %.3e, max |dlogit| %.3e, "
      "top-1 %.2f%%, %lld/%lld free-running pairs identical\n",
      static_cast<long long>(tf.positions), tf.kl.mean, tf.kl.max, tf.max_abs_dlogit.max,
      100 * tf.top1_agreement, static_cast<long long>(summarize_free_running(report).identical),
      static_cast<long long>(summarize_free_running(report).pairs));
  EXPECT_LT(tf.kl.max, 1e-6);
  EXPECT_LT(tf.max_abs_dlogit.max, 1e-2);  // a missing all-reduce moves logits by O(1)
  EXPECT_GE(tf.top1_agreement, 0.99);
}

TEST(AbPrompts, ShapesAndErrors) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera_ab_prompt_test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return dir / name;
  };
  auto ok = load_prompts(write("ok.jsonl",
                               "{\"token_ids\": [1, 2, 3], \"id\": \"x\"}\n\n"
                               "{\"prompt\": \"hello\"}\n"
                               "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n"));
  ASSERT_EQ(ok.size(), 3u);
  EXPECT_EQ(ok[0].id, "x");
  EXPECT_EQ(ok[1].id, "line 3");
  EXPECT_EQ(ok[2].kind, "messages");
  // Text prompts need a tokenizer; ids are range-checked.
  EXPECT_THROW(tokenize_prompts(ok, nullptr, 512), Error);
  auto ids = load_prompts(write("ids.jsonl", "{\"token_ids\": [1, 600]}\n"));
  EXPECT_THROW(tokenize_prompts(ids, nullptr, 512), Error);
  auto expect_error = [&](const std::string& text, const std::string& needle) {
    try {
      load_prompts(write("bad.jsonl", text));
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("{\"token_ids\": [1]}\n{not json\n", "bad.jsonl:2");
  expect_error("{\"prompt\": \"a\", \"token_ids\": [1]}\n", "exactly one");
  expect_error("{\"token_ids\": [1, -4]}\n", "not a token id");
  expect_error("{\"token_ids\": []}\n", "non-empty");
  expect_error("\n\n", "no prompt");
}

}  // namespace
}  // namespace tessera::ab
