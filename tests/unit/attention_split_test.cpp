// The reference attention plugin shares a large batch out by sequence over the host's compute
// threads (the host API's parallel_for; plugins/attention_reference, option "parallel_min_work").
// Each token's arithmetic is the same on any thread, so forcing the split on every batch must
// give bit-identical logits to never splitting, through prefill (several sequences of different
// lengths) and decode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "engine_harness.hpp"
#include "ops/compute_threads.hpp"
#include "runtime/runtime.hpp"
#include "util/check.hpp"

namespace tessera {
namespace {

RuntimeOptions with_min_work(const std::string& min_work) {
  RuntimeOptions o = engine_test::runtime_options(0.05);
  o.attention_options_json = R"({"parallel_min_work": )" + min_work + "}";
  return o;
}

// Runs 6 sequences: one prefill step (all logits), then 4 greedy decode steps; returns every
// step's logits concatenated.
std::vector<float> run_batch(Runtime& rt) {
  constexpr int kSequences = 6;
  std::vector<std::vector<int32_t>> prompts;
  for (int s = 0; s < kSequences; ++s)
    prompts.push_back(engine_test::make_prompt(100 + s, 20 + 17 * s));
  std::vector<float> all;
  engine_test::forward_greedy_steps(
      rt, prompts, 5, [&](int, const dsv4::Logits& logits, const auto&) {
        all.insert(all.end(), logits.values.begin(), logits.values.end());
      });
  return all;
}

TEST(ReferenceAttentionSplit, ForcedSplitGivesBitIdenticalLogits) {
  const int threads_before = ops::compute_threads();
  ops::set_compute_threads(2);  // a helper thread even on a one-core machine
  Runtime never(with_min_work("9223372036854775807"));
  Runtime always(with_min_work("0"));
  const std::vector<float> a = run_batch(never);
  const std::vector<float> b = run_batch(always);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  size_t differing = 0;
  for (size_t i = 0; i < a.size(); ++i) differing += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  EXPECT_EQ(differing, 0u) << "of " << a.size() << " logits";
  ops::set_compute_threads(threads_before);
}

TEST(ReferenceAttentionSplit, NegativeMinWorkIsRefused) {
  EXPECT_THROW(Runtime rt(with_min_work("-1")), Error);
}

}  // namespace
}  // namespace tessera
