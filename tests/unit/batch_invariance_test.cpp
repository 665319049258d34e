// On a CPU with AVX-512 the whole forward is batch-invariant: our GEMM computes every output the
// same way wherever it sits (docs/perf.md "GEMM on CPU"), and attention, mHC, norms and the
// compressors work per token or per sequence. So a sequence's logits must be bit-identical whether
// it runs alone or among five others of different lengths, through prefill and decode, and with
// one or two compute threads. (Elsewhere OpenBLAS runs and this does not hold: docs/engine.md.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine_harness.hpp"
#include "ops/compute_threads.hpp"
#include "ops/gemm_nt.hpp"
#include "ops/linear.hpp"
#include "runtime/runtime.hpp"

namespace tessera {
namespace {

// Sequence 0's logits over a prefill (all rows) and 4 greedy decode steps, run in a batch of
// `batch` sequences (sequence 0 first, the others with other prompts and lengths).
std::vector<float> logits_of_first(int batch) {
  Runtime rt(engine_test::runtime_options(0.05));
  std::vector<std::vector<int32_t>> prompts;
  for (int s = 0; s < batch; ++s) {
    prompts.push_back(engine_test::make_prompt(300 + s, 23 + 11 * s));
  }
  std::vector<float> first;
  engine_test::forward_greedy_steps(
      rt, prompts, 5, [&](int step, const dsv4::Logits& logits, const auto& inputs) {
        const auto rows0 = static_cast<int64_t>(step == 0 ? inputs[0].size() : 1);
        const float* begin = logits.row(logits.chunk_rows[0]);
        first.insert(first.end(), begin, begin + rows0 * logits.vocab);
      });
  return first;
}

size_t differing(const std::vector<float>& a, const std::vector<float>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  }
  return n;
}

TEST(BatchInvariance, ASequencesLogitsAreTheSameAloneOrInABatch) {
  if (std::string(ops::gemm_backend_name()) == "openblas") {
    GTEST_SKIP() << "needs our GEMM, AVX-512 or AVX2 (this CPU or TESSERA_GEMM runs OpenBLAS)";
  }
  const int threads_before = ops::compute_threads();
  ops::set_compute_threads(1);
  const std::vector<float> alone = logits_of_first(1);
  ops::set_compute_threads(2);
  const std::vector<float> batched = logits_of_first(6);
  const std::vector<float> alone_two_threads = logits_of_first(1);
  ops::set_compute_threads(threads_before);
  ASSERT_FALSE(alone.empty());
  ASSERT_EQ(alone.size(), batched.size());
  ASSERT_EQ(alone.size(), alone_two_threads.size());
  EXPECT_EQ(differing(alone, batched), 0u) << "of " << alone.size() << " logits, alone vs in 6";
  EXPECT_EQ(differing(alone, alone_two_threads), 0u) << "of " << alone.size() << ", 1 vs 2 threads";
}

}  // namespace
}  // namespace tessera
