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

// vLLM's phase histograms: queue = as the engine measured it, prefill = ttft - queue, decode =
// e2e - ttft, inference = e2e - queue; prefill and decode only for a choice that produced a token.
TEST(ServeGenerationMetrics, PhaseHistogramsSplitTheRequestsTime) {
  ServeMetrics m(4096);
  m.request_phases(/*queue=*/0.25, /*ttft=*/1.0, /*e2e=*/3.0);
  m.request_phases(/*queue=*/0.5, std::nullopt, /*e2e=*/0.75);  // aborted while waiting
  const std::string text = m.exposition("tiny", EngineSnapshot{});
  const auto has = [&](const std::string& line) {
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << "missing: " << line;
  };
  has("vllm:request_queue_time_seconds_count{model_name=\"tiny\"} 2");
  has("vllm:request_queue_time_seconds_sum{model_name=\"tiny\"} 0.75");
  has("vllm:request_inference_time_seconds_sum{model_name=\"tiny\"} 3");  // 2.75 + 0.25
  has("vllm:request_prefill_time_seconds_count{model_name=\"tiny\"} 1");
  has("vllm:request_prefill_time_seconds_sum{model_name=\"tiny\"} 0.75");
  has("vllm:request_decode_time_seconds_count{model_name=\"tiny\"} 1");
  has("vllm:request_decode_time_seconds_sum{model_name=\"tiny\"} 2");
  has("# TYPE vllm:request_decode_time_seconds histogram");
}

}  // namespace
}  // namespace tessera::serve
