// Linear weights kept in bfloat16 in memory when that loses nothing.
//
// Checkpoints store DeepSeek-V4's linear weights in BF16, FP8 e4m3 with power-of-two block scales
// or FP4 e2m1 with power-of-two scales; every such value is exactly a bfloat16 (at most 8
// significant bits, fp32's exponent range), so fp32 copies spend twice the bytes on zero bits. A
// decode step reads every weight once: half the bytes is up to half the time where the step is
// bandwidth-bound (batch 1), and a model twice the size fits the same memory and caches. The GEMM
// widens bf16 to fp32 in registers, exactly, so every product and every output bit is unchanged.
#pragma once

#include <cstdint>

#include "model/dsv4_weights.hpp"

namespace tessera::dsv4 {

struct Bf16Summary {
  int64_t tensors = 0;    // linear weights now in bf16
  int64_t kept_fp32 = 0;  // linear weights with a value that is not a bfloat16
  int64_t bytes_saved = 0;
};

// Moves every linear weight (the operands of ops::linear: projections, experts, router, mHC
// mixes, vocabulary head) whose values are all bfloat16 into Tensor::bf16. Other tensors (norms,
// embeddings, biases, positional terms) stay fp32.
Bf16Summary keep_linear_weights_in_bf16(ModelWeights& weights);

// Rounds every linear weight to the nearest bfloat16 (ties to even): random benchmark weights
// made like a real checkpoint's, for keep_linear_weights_in_bf16.
void round_linear_weights_to_bf16(ModelWeights& weights);

// True when v is exactly a bfloat16 (its low 16 bits are zero).
bool is_bf16_exact(float v);

}  // namespace tessera::dsv4
