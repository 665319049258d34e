// The MoE's routed rows grouped by expert (DeepSeek-V4's MoE computes each expert over the tokens
// that picked it): from the router's picks [tokens, K] (distinct experts per token) and weights,
//   offsets [E + 1]: expert e's rows are [offsets[e], offsets[e + 1]), tokens in order within it;
//   source [tokens * K]: the token of each grouped row;
//   src, combine_weight [tokens * K]: token t's rows and weights in ascending expert order, the
//     order the combine adds them in.
// A pick outside [0, E) (a routing failure, reported by the router) joins no expert; every entry
// starts at row 0 and weight 0, so the kernels after it stay inside their buffers. The device
// kernel (core/cuda/kernels/moe_combine.cu) computes the same.
#pragma once

#include <cstdint>

namespace tessera::ops {

void group_routed_rows(const int32_t* picked, const float* weight, int64_t tokens, int64_t K,
                       int64_t E, int64_t* offsets, int64_t* source, int64_t* src,
                       float* combine_weight);

}  // namespace tessera::ops
