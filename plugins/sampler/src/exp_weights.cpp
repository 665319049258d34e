#include "exp_weights.hpp"

#include <algorithm>
#include <bit>

#include "target_clones.hpp"  // TS_SAMPLER_CLONES: one clone per x86-64 level

namespace tessera::sampler {
namespace {

constexpr double kLog2e = 1.4426950408889634074;
constexpr double kLn2 = 0.69314718055994530942;
// Adding 1.5 * 2^52 rounds a double of magnitude < 2^51 to the nearest integer, which then sits in
// the low mantissa bits (round-to-nearest mode, the default).
constexpr double kRoundShift = 0x1.8p52;
// exp(x) for x below this is < 2^-1000: 0 in float. Clamping keeps 2^n a normal double and turns
// -inf (removed tokens) into 0.
constexpr double kMinLog2 = -1000.0;

// Taylor coefficients ln2^k / k! of 2^r = e^(r ln2), k = 0..8. For |r| <= 1/2 the remainder is
// below (ln2 / 2)^9 / 9! * e^(ln2 / 2) < 3e-10, far under half an fp32 ulp (3e-8).
constexpr double kC[9] = {
    1.0,
    kLn2,
    kLn2* kLn2 / 2,
    kLn2* kLn2* kLn2 / 6,
    kLn2* kLn2* kLn2* kLn2 / 24,
    kLn2* kLn2* kLn2* kLn2* kLn2 / 120,
    kLn2* kLn2* kLn2* kLn2* kLn2* kLn2 / 720,
    kLn2* kLn2* kLn2* kLn2* kLn2* kLn2* kLn2 / 5040,
    kLn2* kLn2* kLn2* kLn2* kLn2* kLn2* kLn2* kLn2 / 40320,
};

// out[i] = exp((in[i] - l_max) / t) for i < n.
[[gnu::always_inline]] inline void exp_block(const float* __restrict in, float* __restrict out,
                                             int64_t n, float l_max, float t) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = (in[i] - l_max) / t;  // the scalar sampler's exponent, bit for bit
    double z = static_cast<double>(x) * kLog2e;
    z = std::max(z, kMinLog2);
    const double shifted = z + kRoundShift;
    const double k = shifted - kRoundShift;  // round(z), an integer in [-1000, 0]
    const double r = z - k;                  // [-1/2, 1/2]
    double p = kC[8];
    p = p * r + kC[7];
    p = p * r + kC[6];
    p = p * r + kC[5];
    p = p * r + kC[4];
    p = p * r + kC[3];
    p = p * r + kC[2];
    p = p * r + kC[1];
    p = p * r + kC[0];
    // 2^k from the integer left in the low bits of `shifted`: biased exponent k + 1023 >= 23.
    const int64_t n_bits = std::bit_cast<int64_t>(shifted) - std::bit_cast<int64_t>(kRoundShift);
    const double scale = std::bit_cast<double>(static_cast<uint64_t>(n_bits + 1023) << 52);
    out[i] = static_cast<float>(p * scale);
  }
}

// Sum of w[0, n) in 8 interleaved lanes (vectorisable without reassociation), then the lanes.
[[gnu::always_inline]] inline double sum_block(const float* w, int64_t n) {
  double lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] += static_cast<double>(w[i + j]);
  }
  double sum = 0.0;
  for (; i < n; ++i) sum += static_cast<double>(w[i]);
  for (const double lane : lanes) sum += lane;
  return sum;
}

// Both loops over the row's blocks, inside one cloned function each (the helpers above are
// inlined into every clone, so they get its instruction set).
TS_SAMPLER_CLONES double exp_row(const float* in, float* out, int64_t vocab, float l_max, float t,
                                 double* block_sums) {
  double total = 0.0;
  for (int64_t first = 0, b = 0; first < vocab; first += kWeightBlock, ++b) {
    const int64_t n = std::min(kWeightBlock, vocab - first);
    exp_block(in + first, out + first, n, l_max, t);
    block_sums[b] = sum_block(out + first, n);
    total += block_sums[b];
  }
  return total;
}

TS_SAMPLER_CLONES double sum_row(const float* w, int64_t vocab, double* block_sums) {
  double total = 0.0;
  for (int64_t first = 0, b = 0; first < vocab; first += kWeightBlock, ++b) {
    block_sums[b] = sum_block(w + first, std::min(kWeightBlock, vocab - first));
    total += block_sums[b];
  }
  return total;
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

void sum_weight_blocks(std::span<const float> weights, BlockWeights& sums) {
  sums.block_sums.resize(static_cast<size_t>(block_count(weights.size())));
  sums.total =
      sum_row(weights.data(), static_cast<int64_t>(weights.size()), sums.block_sums.data());
}

}  // namespace tessera::sampler
