// AVX2 versions of the top-p search's two stream compactions (certified_top_p.cpp): the heavy
// pass and the copy of one histogram bucket's weights. Which weights a step keeps is data-dependent
// (a flat row's bucket test is a coin toss), so the portable loops are branch-free but store every
// weight and advance a dependent count: ~1.8 ns a weight on a Zen 3 (the heavy pass alone was 21%
// of a flat 16k top-p row's profile). Here 8 weights at a time are packed to the low lanes by one
// permute whose indices come from a 256-entry table of the comparison's mask. Results equal the
// portable versions' (the heavy mass up to the order of its double sum). Called only where the
// CPU has AVX2 (cpu_has_avx2, target_clones.hpp).
#pragma once

#include <cstdint>

#include "certified_top_p.hpp"

namespace tessera::sampler {

// out, columns: room for n + 16 values each (whole vectors are stored past the kept ones).
HeavyPass heavy_weights_avx2(const float* w, int64_t n, float t, float* out, int32_t* columns,
                             int64_t column_limit);

// The weights in [lo, hi) copied to out (room for n), in order; returns how many.
int64_t gather_between_avx2(const float* w, int64_t n, float lo, float hi, float* out);

}  // namespace tessera::sampler
