// attend_with_sink (reference_kernels.hpp) in fp32, per head h (ARCHITECTURE.md: fp32
// accumulation everywhere). The definition, which the plain loops below write out and the
// AVX-512 and AVX2 kernels (sparse_attention_avx512.cpp, _avx2.cpp) compute with the same
// operations:
//   d_j   = dot16(q_h, row_j) (fp32_dot.hpp): 16 partial sums, lane k an fma chain q[c] * row[c] +
//   lane over
//           c = k (mod 16), c < dim - dim % 16, ascending from 0; folded (fold16); then an fma
//           chain over the remaining c, ascending;
//   s_j   = d_j * scale;  m = max(sink_h, max_j s_j);  e_j = fma_exp_nonpositive(s_j - m)
//           (tessera/fma_exp.hpp);  denom = fold16 of 16 partial sums of e_j (lane k: j = k
//           mod 16, ascending) + fma_exp_nonpositive(sink_h - m)  (sink_softmax.hpp);
//   o_h,c = a_c * (1 / denom), a_c an fma chain e_j * row_j[c] + a_c over j ascending from 0
//           (a product: a division per output was ~8% of the kernel).
// Every operation is an fp32 operation (no contraction: -ffp-contract=off in CMakeLists.txt), so
// the bits do not depend on the CPU or on how the compiler vectorises.
// tests/unit/reference_attention_kernel_test.cpp checks both bodies against it bit for bit.
#include <algorithm>
#include <cmath>
#include <vector>

#include "reference_kernels.hpp"
#include "sink_softmax.hpp"
#include "sparse_attention_avx2.hpp"
#include "sparse_attention_avx512.hpp"
#include "tessera/simd_clones.hpp"

namespace tessera::reference {

TS_SIMD_CLONES void attend_with_sink_plain(const float* q, int32_t n_heads, int32_t dim,
                                           const float* const* rows, int64_t n_rows, float scale,
                                           const float* sink, float* out) {
  std::vector<float> e(static_cast<size_t>(n_rows));
  std::vector<float> acc(static_cast<size_t>(dim));  // [dim] weighted sum of the rows
  for (int32_t h = 0; h < n_heads; ++h) {
    const float* qh = q + static_cast<int64_t>(h) * dim;
    for (int64_t j = 0; j < n_rows; ++j) {
      e[j] = dot16(qh, rows[j], dim);
    }
    const float denom = sink_softmax(e.data(), n_rows, scale, sink[h]);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t j = 0; j < n_rows; ++j) {
      const float* row = rows[j];
      for (int32_t c = 0; c < dim; ++c) {
        acc[c] = std::fma(e[j], row[c], acc[c]);
      }
    }
    float* oh = out + static_cast<int64_t>(h) * dim;
    const float inverse = 1.0f / denom;
    for (int32_t c = 0; c < dim; ++c) {
      oh[c] = acc[c] * inverse;
    }
  }
}

void attend_with_sink(const float* q, int32_t n_heads, int32_t dim, const float* const* rows,
                      int64_t n_rows, float scale, const float* sink, float* out) {
  if (attend_avx512_available()) {
    attend_with_sink_avx512(q, n_heads, dim, rows, n_rows, scale, sink, out);
  } else if (attend_avx2_available()) {
    attend_with_sink_avx2(q, n_heads, dim, rows, n_rows, scale, sink, out);
  } else {
    attend_with_sink_plain(q, n_heads, dim, rows, n_rows, scale, sink, out);
  }
}

}  // namespace tessera::reference
