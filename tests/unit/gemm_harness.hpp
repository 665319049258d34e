// Shared by the GEMM tests (gemm_nt_test, gemm_bf16_activations_test): reproducible operands.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

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

}  // namespace tessera::ops
