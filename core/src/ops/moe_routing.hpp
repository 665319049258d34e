// DeepSeek-V4's router (DSV4.md §2.6): scores = sqrt(softplus(logits)); each token's K experts by
// biased score (learned layers; ties to the lower expert) or from the token-id table tid2eid
// (hash layers); weights = score / sum of the K scores * routed_scaling_factor. Each token
// alone, so the result does not depend on the batch or the thread split. The model's MoE and
// the device layer's cpu backend both run this.
#pragma once

#include <cstdint>

namespace tessera::ops {

struct MoeRouting {
  int64_t experts = 0;          // E
  int64_t per_token = 0;        // K
  const float* bias = nullptr;  // [E] correction bias of a learned layer, or null
  // Hash layers: tid2eid [table_size] (K entries per token id), token_ids [tokens]; null for
  // learned layers.
  const int32_t* tid2eid = nullptr;
  int64_t table_size = 0;
  const int32_t* token_ids = nullptr;
  double scaling = 1.0;  // routed_scaling_factor
};

// scores [tokens, E]: the router's logits, replaced by sqrt(softplus(logit)). picked [tokens, K]
// and weights [tokens, K] receive each token's experts and weights. Returns the lowest token
// whose id lies outside tid2eid or whose table entry is not an expert (tokens when none): its
// outputs are unspecified, and the caller reports it.
int64_t route_tokens(const MoeRouting& routing, float* scores, int64_t tokens, int32_t* picked,
                     float* weights);

}  // namespace tessera::ops
