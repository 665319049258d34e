// hc_post (model/hyper_connection.hpp): X'[k] = post_k * block_out + sum_j comb[j][k] X[j] on each
// token's n streams, against that formula in double — the one-pass path of hc_mult = 4 and the
// general loop (hc_mult 3, 5), random comb that is not symmetric (a transposed index shows), odd
// widths and several tokens (the per-token chunks of the compute threads).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "gemm_harness.hpp"  // random_values
#include "model/hyper_connection.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera {
namespace {

TEST(HcPost, MixesTheStreamsAsTheFormulaSays) {
  for (const int64_t n : {4, 3, 5}) {
    for (const int64_t D : {1, 37, 512}) {
      for (const int64_t T : {1, 19}) {
        dsv4::ModelConfig config;
        config.hc_mult = n;
        config.hidden_size = D;
        dsv4::HcMix mix;
        mix.post = ops::random_values(static_cast<size_t>(T * n), 1);
        mix.comb = ops::random_values(static_cast<size_t>(T * n * n), 2);
        const std::vector<float> out = ops::random_values(static_cast<size_t>(T * D), 3);
        const std::vector<float> before = ops::random_values(static_cast<size_t>(T * n * D), 4);
        std::vector<float> streams = before;
        dsv4::hc_post(config, mix, out.data(), streams.data(), T);
        for (int64_t t = 0; t < T; ++t) {
          for (int64_t k = 0; k < n; ++k) {
            for (int64_t i = 0; i < D; ++i) {
              double want = static_cast<double>(mix.post[t * n + k]) * out[t * D + i];
              double magnitude = std::fabs(want);
              for (int64_t j = 0; j < n; ++j) {
                const double term = static_cast<double>(mix.comb[(t * n + j) * n + k]) *
                                    before[(t * n + j) * D + i];
                want += term;
                magnitude += std::fabs(term);
              }
              const float got = streams[(t * n + k) * D + i];
              ASSERT_NEAR(got, want, 1e-6 * magnitude + 1e-30)
                  << "hc_mult " << n << " width " << D << " token " << t << " stream " << k
                  << " column " << i;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera
