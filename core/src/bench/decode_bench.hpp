// `tessera bench decode`: batch-1 decode speed of a random DeepSeek-V4 checkpoint against the
// machine's copy bandwidth. Decode at batch 1 reads every active weight once per token, so
// achieved weight GB/s over copy GB/s says how close the CPU path is to the memory bound.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/dsv4_weights.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::bench {

struct DecodeBenchOptions {
  std::string preset = "50m";  // "50m" | "tiny"
  int64_t prompt_tokens = 32;
  int64_t decode_tokens = 64;
  int threads = 1;  // BLAS and copy-loop threads; 0: hardware threads
  std::string plugin_dir;
  bool bf16_weights =
      false;  // linear weights rounded to bfloat16 and kept in bf16 (a checkpoint's)
};

struct DecodeBenchResult {
  uint64_t parameters = 0;
  uint64_t weight_bytes_per_token = 0;
  double tokens_per_second = 0;
  double weight_gbps = 0;
  double copy_gbps = 0;
  int threads = 1;
};

dsv4::ModelConfig bench_model_config(const std::string& preset);
// The preset's random weights (seed 7), packed into panels and placed as the runtime does a
// loaded model's (model/weight_panels.hpp, weight_placement.hpp); bf16: rounded to bfloat16 and
// kept in bf16, as a real checkpoint's would be; bf16_activations: for model.dtype = "bf16" (bf16
// weights stay rows).
std::shared_ptr<const dsv4::ModelWeights> bench_model_weights(const dsv4::ModelConfig& config,
                                                              bool bf16,
                                                              bool bf16_activations = false);
DecodeBenchResult run_decode_bench(const DecodeBenchOptions& options);
std::string format_decode_table(const DecodeBenchOptions& options, const DecodeBenchResult& r);

}  // namespace tessera::bench
