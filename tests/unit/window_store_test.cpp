// The forward stores each new token's kv row into the window cache from the per-token pass that
// rotates it, on whichever compute thread has its chunk of the batch (model/attention_layer.cpp).
// A row the kv format refuses (a non-finite value) must still fail the forward with the row's
// place in the whole batch, as a single store of the batch names it, whichever thread stored it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bench/decode_bench.hpp"
#include "engine_harness.hpp"
#include "model/random_weights.hpp"
#include "ops/compute_threads.hpp"
#include "runtime/runtime.hpp"
#include "util/check.hpp"

namespace tessera {
namespace {

TEST(WindowStore, ANonFiniteKvRowIsRefusedNamingItsRowOfTheBatch) {
  const dsv4::ModelConfig config = bench::bench_model_config("tiny");
  auto weights = std::make_shared<dsv4::ModelWeights>(dsv4::random_model_weights(config, 3));
  constexpr int32_t kBad = 77;  // its embedding row is NaN: so are its q and kv in layer 0
  const int64_t D = config.hidden_size;
  for (int64_t c = 0; c < D; ++c) {
    weights->embed.data[static_cast<size_t>(kBad * D + c)] =
        std::numeric_limits<float>::quiet_NaN();
  }
  Runtime rt(engine_test::runtime_options(0.05), config, weights);
  const int threads_before = ops::compute_threads();
  ops::set_compute_threads(2);  // 24 rows: two chunks, the bad row in the second
  std::vector<std::unique_ptr<SequenceKv>> seqs;
  std::vector<std::vector<int32_t>> prompts;
  for (int s = 0; s < 4; ++s) {
    seqs.push_back(rt.new_sequence());
    prompts.push_back(engine_test::make_prompt(40 + s, 6, config.vocab_size));
    for (int32_t& id : prompts.back()) {
      id = id == kBad ? kBad + 1 : id;
    }
  }
  prompts[3][1] = kBad;  // row 3 * 6 + 1 = 19 of the batch
  dsv4::ForwardBatch batch;
  for (int s = 0; s < 4; ++s) {
    batch.chunks.push_back({seqs[s].get(), prompts[s], false});
  }
  std::string message;
  try {
    rt.model().forward(batch);
  } catch (const std::exception& e) {
    message = e.what();
  }
  ops::set_compute_threads(threads_before);
  EXPECT_NE(message.find("non-finite value in row 19,"), std::string::npos) << message;
}

}  // namespace
}  // namespace tessera
