#include <algorithm>
#include <cmath>
#include <vector>

#include "reference_kernels.hpp"
#include "sink_softmax.hpp"
#include "sparse_attention_avx512.hpp"
#include "tessera/simd_clones.hpp"

namespace tessera::reference {

namespace {

// q . row in double with 8 interleaved partial sums: independent chains the compiler vectorises
// (a single running sum is one serial chain of dim dependent adds). Only the order of the double
// additions differs from the plain loop: ~1e-16 relative, far below the fp32 output's resolution.
[[gnu::always_inline]] inline double dot_double(const double* q, const float* row, int32_t dim) {
  constexpr int32_t kLanes = 8;
  double lanes[kLanes] = {};
  int32_t c = 0;
  for (; c + kLanes <= dim; c += kLanes) {
    for (int32_t k = 0; k < kLanes; ++k) {
      lanes[k] += q[c + k] * static_cast<double>(row[c + k]);
    }
  }
  double dot = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
               ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  for (; c < dim; ++c) {
    dot += q[c] * static_cast<double>(row[c]);
  }
  return dot;
}

// The plain loops, for CPUs without AVX-512 (its clone is the one attend_with_sink_avx512 writes
// out with intrinsics).
TS_SIMD_CLONES void attend_with_sink_plain(const float* q, int32_t n_heads, int32_t dim,
                                           const float* const* rows, int64_t n_rows, float scale,
                                           const float* sink, float* out) {
  std::vector<double> logit(static_cast<size_t>(n_rows));
  std::vector<double> qd(static_cast<size_t>(dim));   // [dim] the head's query in double
  std::vector<double> acc(static_cast<size_t>(dim));  // [dim] weighted sum of the rows
  for (int32_t h = 0; h < n_heads; ++h) {
    const float* qh = q + static_cast<int64_t>(h) * dim;
    for (int32_t c = 0; c < dim; ++c) {
      qd[c] = qh[c];
    }
    for (int64_t j = 0; j < n_rows; ++j) {
      logit[j] = dot_double(qd.data(), rows[j], dim) * scale;
    }
    const double denom = sink_softmax(logit.data(), n_rows, sink[h]);
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t j = 0; j < n_rows; ++j) {
      const double w = logit[j];
      const float* row = rows[j];
      for (int32_t c = 0; c < dim; ++c) {
        acc[c] += w * row[c];
      }
    }
    float* oh = out + static_cast<int64_t>(h) * dim;
    for (int32_t c = 0; c < dim; ++c) {
      oh[c] = static_cast<float>(acc[c] / denom);
    }
  }
}

}  // namespace

void attend_with_sink(const float* q, int32_t n_heads, int32_t dim, const float* const* rows,
                      int64_t n_rows, float scale, const float* sink, float* out) {
  if (attend_avx512_available()) {
    attend_with_sink_avx512(q, n_heads, dim, rows, n_rows, scale, sink, out);
  } else {
    attend_with_sink_plain(q, n_heads, dim, rows, n_rows, scale, sink, out);
  }
}

}  // namespace tessera::reference
