// Random DeepSeek-V4 weights of any shape (benchmarks, tests that need no checkpoint). Values are
// uniform in +-1/sqrt(fan_in) for projections (so activations keep their scale), ones for norms,
// small values for mHC and routing tensors; distinct expert ids in every tid2eid row.
#pragma once

#include <cstdint>

#include "model/dsv4_weights.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

ModelWeights random_model_weights(const ModelConfig& config, uint64_t seed);

// Bytes of weights one batch-1 decode step reads: every projection of every layer, the router,
// the shared expert, experts_per_token routed experts and the head (linear weights, 4 bytes each
// in fp32, 2 in bf16), one embedding row and the norm (fp32).
uint64_t decode_weight_bytes(const ModelConfig& config, int64_t bytes_per_linear_weight = 4);
// All parameters.
uint64_t parameter_count(const ModelWeights& weights);

}  // namespace tessera::dsv4
