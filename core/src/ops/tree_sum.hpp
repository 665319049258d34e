// A fixed pairwise order for adding several partial sums of the same values: the order that
// makes tensor-parallel sums independent of how many ranks share them (executor.reduction_parts,
// docs/engine.md "Determinism").
//
// tree(p[0..n)) = p[0] for n = 1, else tree(p[0..m)) + tree(p[m..n)) with m the largest power
// of two below n: level by level, neighbours added in index order ((p0 + p1) + (p2 + p3) for 4;
// ((p0 + p1) + p2) for 3). A run of 2^j parts starting at a multiple of 2^j is one subtree, so
// with n = 2^k parts split over R = 2^i ranks in contiguous runs, each rank's tree of its run
// followed by the tree over the R rank results is exactly the tree over all n parts.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "util/uninitialized_vector.hpp"

namespace tessera::ops {

// out[i] = tree over parts of parts[p][i], for i < count (out may be parts[0]; no other part is
// written). Elementwise: the same adds whatever count or thread split.
void tree_sum(std::span<const float* const> parts, int64_t count, float* out);

// The outputs of a sum split into `parts` products: part 0 is `first` (the caller's buffer),
// parts 1.. are `count` unwritten floats each, owned by `store`.
std::vector<float*> part_buffers(float* first, int parts, int64_t count,
                                 std::vector<UninitializedVector<float>>& store);

}  // namespace tessera::ops
