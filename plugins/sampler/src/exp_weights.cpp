#include "exp_weights.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "target_clones.hpp"  // TS_SAMPLER_CLONES: one clone per x86-64 level
#include "tessera/fma_exp.hpp"

namespace tessera::sampler {
namespace {

using namespace sdk::fma_exp_constants;  // NOLINT(google-build-using-namespace): the method's names

// tessera/fma_exp.hpp has the method and its constants (the SDK's fma_exp_nonpositive). The
// AVX2 / AVX-512 clones contract the polynomial and the reduction into FMAs
// (plugins/sampler/CMakeLists.txt), the SSE2 clone rounds every step; both were measured against
// a double-precision exp on every float exponent in [-104, 0] (exp_weights.hpp), and
// tests/unit/sampler_kernels_test.cpp checks the bound on the running CPU's clone. Below
// kMinExponent the weight becomes 0, an error the absolute term kWeightAbsError covers.
// out[i] = exp((in[i] - l_max) / t) for i < n.
[[gnu::always_inline]] inline void exp_block(const float* __restrict in, float* __restrict out,
                                             int64_t n, float l_max, float t) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = (in[i] - l_max) / t;  // the scalar sampler's exponent, bit for bit
    const float xc = std::max(x, kMinExponent);
    const float shifted = xc * kLog2e + kRoundShift;
    const float k = shifted - kRoundShift;  // round(xc log2 e), an integer in [-126, 0]
    const float r = (xc - k * kC1) - k * kC2;
    float p = kP[0];
    p = p * r + kP[1];
    p = p * r + kP[2];
    p = p * r + kP[3];
    p = p * r + kP[4];
    p = p * r + kP[5];
    const float e_r = (p * (r * r) + r) + 1.0f;
    // 2^k from the integer left in the low bits of `shifted`: biased exponent k + 127 >= 1.
    const int32_t k_bits = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kRoundShift);
    const float scale = std::bit_cast<float>(static_cast<uint32_t>(k_bits + 127) << 23);
    out[i] = x < kMinExponent ? 0.0f : e_r * scale;
  }
}

// GCC/clang vector extensions: 8 lanes, split into whatever registers the clone's target has.
using Floats8 = float __attribute__((vector_size(32)));
using Doubles8 = double __attribute__((vector_size(64)));

[[gnu::always_inline]] inline Doubles8 widen(const float* p) {
  Floats8 f;
  std::memcpy(&f, p, sizeof f);
  return __builtin_convertvector(f, Doubles8);
}

// Sum of a whole block of 64 weights in double: a fixed tree (no loop-carried chain of adds, so
// blocks overlap in the pipeline), the same order in every clone.
[[gnu::always_inline]] inline double sum_full_block(const float* w) {
  static_assert(kWeightBlock == 64);
  const Doubles8 a = widen(w) + widen(w + 8), b = widen(w + 16) + widen(w + 24);
  const Doubles8 c = widen(w + 32) + widen(w + 40), d = widen(w + 48) + widen(w + 56);
  const Doubles8 v = (a + b) + (c + d);
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

// The row's blocks summed (the last may be partial), and the total.
[[gnu::always_inline]] inline double sum_blocks(const float* w, int64_t vocab, double* block_sums) {
  const int64_t full = vocab / kWeightBlock;
  for (int64_t b = 0; b < full; ++b) {
    block_sums[b] = sum_full_block(w + b * kWeightBlock);
  }
  if (full * kWeightBlock < vocab) {
    double tail = 0.0;
    for (int64_t i = full * kWeightBlock; i < vocab; ++i) {
      tail += static_cast<double>(w[i]);
    }
    block_sums[full] = tail;
  }
  double total = 0.0;
  for (int64_t b = 0; b < (vocab + kWeightBlock - 1) / kWeightBlock; ++b) {
    total += block_sums[b];
  }
  return total;
}

// One loop over the whole row, then the sums, inside one cloned function each (the helpers above
// are inlined into every clone, so they get its instruction set).
TS_SAMPLER_CLONES double exp_row(const float* in, float* out, int64_t vocab, float l_max, float t,
                                 double* block_sums) {
  if (t == 1.0f) {
    exp_block(in, out, vocab, l_max, 1.0f);  // x / 1 == x: the constant drops the division
  } else {
    exp_block(in, out, vocab, l_max, t);
  }
  return sum_blocks(out, vocab, block_sums);
}

TS_SAMPLER_CLONES double sum_row(const float* w, int64_t vocab, double* block_sums) {
  return sum_blocks(w, vocab, block_sums);
}

int64_t block_count(size_t vocab) {
  return (static_cast<int64_t>(vocab) + kWeightBlock - 1) / kWeightBlock;
}

}  // namespace

void fast_exp_weights(std::span<const float> logits, float l_max, float temperature,
                      std::span<float> out, BlockWeights& sums) {
  sums.block_sums.resize(static_cast<size_t>(block_count(logits.size())));
  sums.total = exp_row(logits.data(), out.data(), static_cast<int64_t>(logits.size()), l_max,
                       temperature, sums.block_sums.data());
}

void libm_exp_weights(std::span<const float> logits, float l_max, float temperature,
                      std::span<float> out, BlockWeights& sums) {
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = logits[i];
    out[i] =
        l == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp((l - l_max) / temperature);
  }
  sum_weight_blocks(out.first(logits.size()), sums);
}

void sum_weight_blocks(std::span<const float> weights, BlockWeights& sums) {
  sums.block_sums.resize(static_cast<size_t>(block_count(weights.size())));
  sums.total =
      sum_row(weights.data(), static_cast<int64_t>(weights.size()), sums.block_sums.data());
}

}  // namespace tessera::sampler
