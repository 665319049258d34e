// Internal to the reference attention: attend_with_sink's AVX-512 body
// (sparse_attention_avx512.cpp).
#pragma once

#include <cstdint>

namespace tessera::reference {

// True when this CPU has AVX-512F; attend_with_sink then runs attend_with_sink_avx512.
bool attend_avx512_available();

// attend_with_sink (reference_kernels.hpp) with the operations its definition lists
// (sparse_attention.cpp). Requires attend_avx512_available().
void attend_with_sink_avx512(const float* q, int32_t n_heads, int32_t dim, const float* const* rows,
                             int64_t n_rows, float scale, const float* sink, float* out);

// The same, as plain loops (what a CPU without AVX-512F runs; the same bits).
void attend_with_sink_plain(const float* q, int32_t n_heads, int32_t dim, const float* const* rows,
                            int64_t n_rows, float scale, const float* sink, float* out);

}  // namespace tessera::reference
