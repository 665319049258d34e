// Copies a model's linear weights (for_each_linear_weight: projections, experts, router, mHC
// mixes, vocabulary head) into one HugePageArena, on 2 MiB pages where the kernel grants them
// (util/huge_page_arena.hpp says why). Only where the values live changes, never the values: the
// same bits, read by the same kernels. Call it once the weights are final — after bf16 storage
// (bf16_weights.hpp) and tensor-parallel sharding — since a later conversion or slice would copy
// them out again. Copies of the placed weights go back on the heap.
#pragma once

#include <cstddef>

#include "model/dsv4_weights.hpp"

namespace tessera::dsv4 {

struct PlacementSummary {
  size_t bytes = 0;          // linear weights copied into the arena
  size_t advised_bytes = 0;  // of the arena, advised MADV_HUGEPAGE
};

PlacementSummary place_linear_weights_on_huge_pages(ModelWeights& weights);

}  // namespace tessera::dsv4
