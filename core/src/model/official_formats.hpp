// How the released DeepSeek-V4 checkpoints store each tensor (DSV4.md §3): FP8 e4m3 with a
// `.scale` of UE8M0 bytes per 128x128 block for the attention and shared-expert projections; FP4
// e2m1 packed as I8 [out, in / 2] with a `.scale` per 32 inputs for routed experts; BF16 for the
// embedding, head, router, compressors, indexer weights_proj and norms; F32 for mHC, sinks, ape
// and the router bias; I64 token tables.
#pragma once

#include <cstdint>
#include <vector>

#include "model/dsv4_weight_plan.hpp"
#include "weights/safetensors_writer.hpp"

namespace tessera::dsv4 {

enum class StoredFormat { F32, BF16, Fp8Blocks, Fp4Groups, I64Table };

[[nodiscard]] StoredFormat official_format(const TensorSpec& spec);

// The safetensors entries of one spec in the official format: the tensor, then its `.scale`
// (FP8 and FP4 only).
[[nodiscard]] std::vector<weights::TensorDeclaration> official_declarations(const TensorSpec& spec);

// Bytes of the spec's entries (weight + scale) in the official format.
[[nodiscard]] uint64_t official_bytes(const TensorSpec& spec);

}  // namespace tessera::dsv4
