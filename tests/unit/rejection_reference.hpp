// The rejection draw of docs/sampler.md ("Rejection draw"), written out for the tests from the
// documentation, not from the plugin's code: grouping, envelope, proposal stream and the fma exp.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "fma_exp_reference.hpp"
#include "sampler_harness.hpp"

namespace tessera::sampler_test {

inline std::vector<float> gaussian_row(std::mt19937_64& rng, size_t vocab, float std_dev) {
  std::normal_distribution<float> normal(0.0f, std_dev);
  std::vector<float> l(vocab);
  for (float& x : l) {
    x = normal(rng);
  }
  return l;
}

// Proposal i's uniform: draw `counter` of the seed's stream, then a stream keyed by its bits.
inline double proposal_uniform(uint64_t seed, uint64_t counter, int i) {
  const uint64_t bits = reference_draw_bits(seed, counter);
  const uint64_t u = i == 0 ? bits : reference_mix64(bits + static_cast<uint64_t>(i) * kGamma);
  return static_cast<double>(u >> 11) * 0x1.0p-53;
}

inline std::vector<float> group_maxima(const std::vector<float>& l) {
  const size_t groups = (l.size() + 255) / 256 * 16;
  std::vector<float> m(groups, -std::numeric_limits<float>::infinity());
  for (size_t c = 0; c < l.size(); ++c) {
    float& g = m[(c / 256) * 16 + c % 16];
    g = std::max(g, l[c]);
  }
  return m;
}

// The documented definition, one proposal at a time: the first accepted proposal that keep
// holds (every one when keep is empty).
inline int32_t reference_rejection(const std::vector<float>& l, float t, uint64_t seed,
                                   uint64_t counter, const std::function<bool(size_t)>& keep = {}) {
  const float l_max = *std::max_element(l.begin(), l.end());
  const std::vector<float> gmax = group_maxima(l);
  const size_t blocks = gmax.size() / 16;
  std::vector<double> bound(gmax.size()), prefix(blocks);
  double total = 0.0;
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t lane = 0; lane < 16; ++lane) {
      size_t n = 0;
      for (size_t c = b * 256 + lane; c < std::min(l.size(), (b + 1) * 256); c += 16) {
        ++n;
      }
      bound[b * 16 + lane] = static_cast<double>(n) * static_cast<double>(reference_exp_bound(
                                                          gmax[b * 16 + lane], l_max, t));
      if (gmax[b * 16 + lane] == l_max) {  // a group holding the max: its exact weight
        double sum = 0.0;
        for (size_t c = b * 256 + lane; c < std::min(l.size(), (b + 1) * 256); c += 16) {
          sum += static_cast<double>(reference_fma_exp(l[c], l_max, t));
        }
        bound[b * 16 + lane] = sum;
      }
    }
    const double* u = &bound[b * 16];
    double pair[8];
    for (size_t i = 0; i < 8; ++i) {
      pair[i] = u[2 * i] + u[2 * i + 1];
    }
    total +=
        ((pair[0] + pair[1]) + (pair[2] + pair[3])) + ((pair[4] + pair[5]) + (pair[6] + pair[7]));
    prefix[b] = total;
  }
  for (int i = 0; i < 1024; ++i) {
    const double target = proposal_uniform(seed, counter, i) * total;
    size_t b = 0;
    while (b < blocks && prefix[b] <= target) {
      ++b;
    }
    if (b == blocks) {
      continue;
    }
    double r = b == 0 ? target : target - prefix[b - 1];
    size_t lane = 0;
    while (lane < 16 && r >= bound[b * 16 + lane]) {
      r -= bound[b * 16 + lane++];
    }
    if (lane == 16) {
      continue;
    }
    const size_t g = b * 16 + lane;
    if (gmax[g] != l_max) {  // a bounded group: column floor(r / c_g), accepted below its weight
      const double c = static_cast<double>(reference_exp_bound(gmax[g], l_max, t));
      const double k = std::floor(r / c);
      const size_t column = b * 256 + lane + static_cast<size_t>(k) * 16;
      if (column < std::min(l.size(), (b + 1) * 256) &&
          std::fma(-k, c, r) < static_cast<double>(reference_fma_exp(l[column], l_max, t)) &&
          (!keep || keep(column))) {
        return static_cast<int32_t>(column);
      }
      continue;
    }
    double cumulative = 0.0;
    for (size_t c = b * 256 + lane; c < l.size() && c < (b + 1) * 256; c += 16) {
      cumulative += static_cast<double>(reference_fma_exp(l[c], l_max, t));
      if (r < cumulative) {
        if (!keep || keep(c)) {
          return static_cast<int32_t>(c);
        }
        break;
      }
    }
  }
  ADD_FAILURE() << "1024 proposals rejected";
  return -1;
}

}  // namespace tessera::sampler_test
