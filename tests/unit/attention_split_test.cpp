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
  std::vector<std::unique_ptr<SequenceKv>> seqs;
  std::vector<std::vector<int32_t>> inputs;
  for (int s = 0; s < kSequences; ++s) {
    seqs.push_back(rt.new_sequence());
    inputs.push_back(engine_test::make_prompt(100 + s, 20 + 17 * s));
  }
  std::vector<float> all;
  for (int step = 0; step < 5; ++step) {
    dsv4::ForwardBatch batch;
    for (int s = 0; s < kSequences; ++s)
      batch.chunks.push_back({seqs[s].get(), inputs[s], /*all_logits=*/step == 0});
    const dsv4::Logits logits = rt.model().forward(batch);
    all.insert(all.end(), logits.values.begin(), logits.values.end());
    for (int s = 0; s < kSequences; ++s) {  // greedy next token from the chunk's last row
      const int64_t last = step == 0
                               ? logits.chunk_rows[s] + static_cast<int64_t>(inputs[s].size()) - 1
                               : logits.chunk_rows[s];
      const float* row = logits.row(last);
      inputs[s] = {static_cast<int32_t>(std::max_element(row, row + logits.vocab) - row)};
    }
  }
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
