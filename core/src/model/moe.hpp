// DeepSeek-V4 mixture of experts (DSV4.md §2.6, TRANSFORMERS_NOTES.md §H): sqrt(softplus) router
// scores, top-k selection with the correction bias (learned layers) or the token-id table (hash
// layers), renormalised weights times routed_scaling_factor, clamped SwiGLU experts plus one
// shared expert. Tokens are grouped by expert so each expert runs one GEMM per step.
#pragma once

#include <cstdint>

#include "model/dsv4_weights.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

// x [T, D] (post ffn_norm), token_ids [T] (for hash routing) -> out [T, D]. With parts > 1 every
// expert's down projection (w2, a sum over its intermediate dimension) runs as `parts` products
// over contiguous column ranges, each combined over the experts on its own, and the parts are
// added by ops::tree_sum (executor.reduction_parts: the order a tensor-parallel split continues).
void moe_forward(const ModelConfig& config, const Moe& moe, bool hash_layer, const float* x,
                 const int32_t* token_ids, int64_t tokens, float* out, int parts = 1);

}  // namespace tessera::dsv4
