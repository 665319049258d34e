// Internal to the reference attention: attend_with_sink's AVX2 + FMA body
// (sparse_attention_avx2.cpp), for x86-64 CPUs without AVX-512F.
#pragma once

#include <cstdint>

namespace tessera::reference {

// True when this CPU has AVX2 and FMA.
bool attend_avx2_available();

// attend_with_sink (reference_kernels.hpp) with the operations its definition lists
// (sparse_attention.cpp): the same bits as the plain loops. Requires attend_avx2_available().
void attend_with_sink_avx2(const float* q, int32_t n_heads, int32_t dim, const float* const* rows,
                           int64_t n_rows, float scale, const float* sink, float* out);

}  // namespace tessera::reference
