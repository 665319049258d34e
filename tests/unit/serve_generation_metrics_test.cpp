// Issue 7's metrics in the Prometheus text: finishes by reason (repetition included) and the
// histogram of reasoning tokens per choice.
#include <gtest/gtest.h>

#include "serve/serve_metrics.hpp"

namespace tessera::serve {
namespace {

TEST(ServeGenerationMetrics, RepetitionFinishesAndReasoningHistogram) {
  ServeMetrics m(4096);
  m.request_finished(Finish::kRepetition, 5, 80, 1.0, 100, 1);
  m.request_finished(Finish::kStop, 5, 10, 0.5, 100, 1);
  m.reasoning_finished(7);
  m.reasoning_finished(300);
  const std::string text = m.exposition("tiny", EngineSnapshot{});
  EXPECT_NE(text.find("finished_reason=\"repetition\""), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE tessera:request_reasoning_tokens histogram"), std::string::npos);
  EXPECT_NE(text.find("tessera:request_reasoning_tokens_count{model_name=\"tiny\"} 2"),
            std::string::npos)
      << text.substr(text.find("tessera:request_reasoning_tokens"), 600);
  EXPECT_NE(text.find("tessera:request_reasoning_tokens_sum{model_name=\"tiny\"} 307"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::serve
