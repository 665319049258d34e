// Shared by the GEMM tests (gemm_nt_test, gemm_panels_test, gemm_bf16_activations_test) and
// hc_post_test: reproducible operands, and the model's product on a given number of threads.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "model/dsv4_weights.hpp"
#include "ops/compute_threads.hpp"
#include "ops/linear.hpp"

namespace tessera::ops {

// n values uniform in [-1, 1), the same for the same seed.
inline std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = u(rng);
  }
  return v;
}

// y = x w^T for `rows` rows of x through linear() on `threads` compute threads (left set).
inline std::vector<float> linear_on_threads(const float* x, int64_t rows, const dsv4::Tensor& w,
                                            int threads) {
  set_compute_threads(threads);
  std::vector<float> y(static_cast<size_t>(rows * w.shape[0]));
  linear(x, rows, w, y.data());
  return y;
}

}  // namespace tessera::ops
